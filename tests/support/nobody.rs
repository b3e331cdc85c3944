//! Acting as a second local user: the user `nobody` (group `nogroup`), reached through
//! `setpriv` (util-linux), as the tests run as root. A missing `setpriv` fails the test loudly:
//! a check of what another user can do must not pass by not running.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Command, Stdio};

use super::sandbox::Sandbox;

/// `nobody`'s uid.
pub const UID: u32 = 65534;

/// `program` to be run as `nobody` (add its arguments).
pub fn command(program: &str) -> Command {
    let mut command = Command::new("setpriv");
    command.args([
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        program,
    ]);
    command
}

/// What `setpriv` failing to start means.
fn no_setpriv(err: std::io::Error) -> ! {
    panic!("`setpriv` (util-linux) is needed to act as a second user: {err}")
}

/// Runs `program args…` as `nobody`; fails the test when it fails.
pub fn run(program: &str, args: &[&str]) {
    let status = command(program)
        .args(args)
        .status()
        .unwrap_or_else(|err| no_setpriv(err));
    assert!(status.success(), "setpriv … {program} {args:?}: {status}");
}

/// Runs `program args…` as `nobody` and returns what it printed; fails the test when it fails.
pub fn output(program: &str, args: &[&str]) -> String {
    let out = command(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| no_setpriv(err));
    assert!(out.status.success(), "setpriv … {program}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `nobody` makes directory `dir` with `mode` (as another user would, first), and it is theirs.
pub fn mkdir(dir: &Path, mode: &str) {
    run("mkdir", &["-m", mode, &dir.display().to_string()]);
    assert_eq!(std::fs::metadata(dir).unwrap().uid(), UID);
}

/// Whether `nobody` can read a byte of `path`.
pub fn can_read(path: &Path) -> bool {
    command("head")
        .args(["-c", "1"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|err| no_setpriv(err))
        .success()
}

/// Makes the sandbox's TMPDIR as shared as `/tmp` (mode 1777: anyone may create entries in
/// it), and lets others walk down to it.
pub fn share_tmp(sandbox: &Sandbox) {
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set_mode(sandbox.root(), 0o711);
    set_mode(&sandbox.tmp, 0o1777);
}
