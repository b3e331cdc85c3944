//! A dropped SSH connection, for real: an sshd of the test's own on a free loopback port (its
//! own host key and authorized key in a temporary directory, StrictModes and PAM off), the
//! system's `ssh -tt` driven through a PTY, and a detachable session started over it. The SSH
//! client is killed with SIGKILL in the middle of a turn; everything lives on (Pi, a background
//! task, a helper and an MCP server), the turn finishes, and a new connection at another size
//! attaches and sees the reply.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::demo::workbench_command;
use support::detach::{
    EndSessions, OTHER_TERMINAL, assert_workbench_modes, bin, describe, reply_at_size, scenario,
    session_log_tail, session_pid, sessions_dir, wait_all_gone, wait_for_ls,
};
use support::pi::{PiLine, mcp_bin, pi_install};
use support::procs::{alive, children, processes_running};
use support::sandbox::Sandbox;
use support::term::{OuterOptions, Session};
use support::wait::eventually;
use support::workbench::settled;

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
const SSHD: &str = "/usr/sbin/sshd";

/// An sshd serving only this test: loopback, a free port, keys in its own directory.
struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
    user: String,
}

impl Sshd {
    fn start() -> Sshd {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing; run `scripts/test-deps.sh` (it installs openssh-server)"
        );
        let dir = tempfile::tempdir().unwrap();
        for key in ["host_key", "client_key"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .status()
                .expect("ssh-keygen (openssh-client) runs");
            assert!(status.success(), "ssh-keygen {key}: {status}");
        }
        std::fs::copy(
            dir.path().join("client_key.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        if nix::unistd::geteuid().is_root() {
            // sshd started by root insists on its privilege-separation directory, which the
            // system's service manager would make.
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        // A free port: the kernel picks one, and sshd takes it right after.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let path = |name: &str| dir.path().join(name).display().to_string();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\n\
             AuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin yes\n\
             LogLevel VERBOSE\n",
            path("host_key"),
            path("sshd.pid"),
            path("authorized_keys"),
        );
        std::fs::write(dir.path().join("sshd_config"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("sshd.log")).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd starts");
        let user = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .unwrap()
            .expect("the current user has a name")
            .name;
        let sshd = Sshd {
            dir,
            child,
            port,
            user,
        };
        eventually("sshd listens", Duration::from_secs(10), || {
            sshd.log()
                .contains(&format!("Server listening on 127.0.0.1 port {port}"))
        });
        sshd
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// `ssh -tt` running `remote` (a shell command line) in a terminal of `outer`'s size.
    fn connect(&self, remote: &str, cwd: &Path, outer: OuterOptions) -> Session {
        let key = self.dir.path().join("client_key").display().to_string();
        let port = self.port.to_string();
        let target = format!("{}@127.0.0.1", self.user);
        let args = [
            "-tt",
            "-F",
            "/dev/null",
            "-i",
            &key,
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "-p",
            &port,
            &target,
            remote,
        ];
        Session::spawn(Path::new("ssh"), &args, &[], cwd, outer).unwrap()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// The shell command line that runs `unipi-tui args…` on the far side of the connection: in
/// the sandbox's project, with its HOME, XDG directories and TMPDIR (sshd's session has the
/// account's own) and `PATH` with the Node of the tests' Pi.
fn remote_command(sandbox: &Sandbox, args: &[&str]) -> String {
    let env = workbench_command(PiLine::Current, &[], &[], sandbox, &[]).env;
    let quote = |text: &str| shlex::try_quote(text).unwrap().into_owned();
    let mut words = vec![
        "cd".to_owned(),
        quote(&sandbox.project.display().to_string()),
        "&&".to_owned(),
        "exec".to_owned(),
        "env".to_owned(),
    ];
    words.extend(
        env.iter()
            .map(|(key, value)| quote(&format!("{key}={value}"))),
    );
    words.push(quote(&bin().display().to_string()));
    words.extend(args.iter().map(|arg| quote(arg)));
    words.join(" ")
}

/// The workbench's own children (not its watchdog), and theirs, once.
fn descendants(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut next = vec![pid];
    while let Some(pid) = next.pop() {
        for child in children(pid) {
            all.push(child);
            next.push(child);
        }
    }
    all
}

#[test]
fn a_session_survives_its_ssh_client_killed_mid_turn_and_a_new_connection_sees_the_reply() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let sshd = Sshd::start();
    let mcp = serde_json::json!({"mcpServers": {"everything": {
        "command": mcp_bin("mcp-server-everything").display().to_string(),
        "args": [],
    }}});
    sandbox.write(
        &sandbox.home.join(".unipi/config/mcp.json"),
        &serde_json::to_string_pretty(&mcp).unwrap(),
    );
    let scenario = scenario().display().to_string();
    let pi = pi_install(PiLine::Current)
        .unwrap()
        .bin
        .display()
        .to_string();
    let start = remote_command(
        &sandbox,
        &[
            "--detachable",
            "far",
            "demo",
            "--scenario",
            &scenario,
            "--pi-bin",
            &pi,
            "--log-level",
            "debug",
        ],
    );
    let mut first = sshd.connect(&start, &sandbox.project, OuterOptions::default());
    first
        .wait_for("Pi's prompt over SSH", START, |s| {
            let text = s.contents();
            text.contains("scripted-detach") && text.contains("○ idle")
        })
        .unwrap_or_else(|err| {
            panic!(
                "{err:#}\nsshd log:\n{}\nsession log:\n{}",
                sshd.log(),
                session_log_tail(&sandbox, 30)
            )
        });
    first.type_text("detach test");
    first.send(b"\r");
    eventually("the bash call runs", REPLY, || {
        !processes_running("sleep 3.31").is_empty()
    });
    let session = session_pid(&sandbox, "far");
    let workbench = children(session);
    assert_eq!(workbench.len(), 1, "{}", describe(&workbench));
    let workbench = workbench[0];
    // The background task, the helper's tool call (its Pi above it) and the MCP server.
    for needle in ["sleep 731", "sleep 733", "mcp-server-everything"] {
        eventually(
            format!("`{needle}` runs under the workbench"),
            REPLY,
            || describe(&descendants(workbench)).contains(needle),
        );
    }
    let mut running: Vec<u32> = vec![session, workbench];
    running.extend(descendants(workbench));
    let pi_and_more = describe(&running);
    assert!(
        pi_and_more.contains("pi-coding-agent") || pi_and_more.contains("/pi "),
        "Pi runs under the workbench:\n{pi_and_more}"
    );
    let client = processes_running("--detachable far");
    assert!(!client.is_empty(), "the client runs on the far side");

    // The connection drops: the SSH client dies without a word.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first.pid().unwrap()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    first.wait_exit(REPLY).unwrap();
    // sshd hangs up the far side's terminal: the client there leaves…
    eventually("the far client leaves", REPLY, || {
        client.iter().all(|pid| !alive(*pid))
    });
    // …and everything else lives on: the session, the workbench, Pi, the task, the turn.
    let gone: Vec<u32> = running.iter().copied().filter(|pid| !alive(*pid)).collect();
    assert!(
        gone.is_empty()
            || gone
                .iter()
                .all(|pid| describe(&[*pid]).contains("sleep 3.31")),
        "ended with the connection:\n{}",
        describe(&gone)
    );
    assert!(!processes_running("sleep 731").is_empty());
    assert!(!processes_running("sleep 733").is_empty());
    wait_for_ls(&sandbox, "far", &["idle", "no"], REPLY);
    assert!(alive(session) && alive(workbench));

    // A new connection, another size: the reply that came while nobody watched, drawn at 120x40.
    let attach = remote_command(&sandbox, &["attach", "far"]);
    let mut second = sshd.connect(&attach, &sandbox.project, OTHER_TERMINAL);
    second
        .wait_for("the reply at 120x40", REPLY, reply_at_size)
        .unwrap_or_else(|err| panic!("{err:#}\nsession log:\n{}", session_log_tail(&sandbox, 30)));
    // The workbench set itself up for this terminal (no kitty protocol here).
    assert_workbench_modes(&second.modes(), false);

    // Quitting Pi ends it all; ssh leaves with Pi's exit code.
    second.wait_for("Pi settled", REPLY, settled).unwrap();
    second.send(b"\x04");
    assert_eq!(second.wait_exit(REPLY).unwrap(), 0);
    wait_all_gone(&sandbox, Duration::from_secs(5));
    // A process in the middle of exiting has no environment left but is not a zombie yet.
    eventually(
        "every process of the session gone",
        Duration::from_secs(5),
        || running.iter().all(|pid| !alive(*pid)),
    );
    assert!(processes_running("sleep 731").is_empty());
    assert!(processes_running("sleep 733").is_empty());
    assert_eq!(
        std::fs::read_dir(sessions_dir(&sandbox)).unwrap().count(),
        0
    );
}
