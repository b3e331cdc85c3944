//! The session's core with a real PTY and a stand-in program (`cat` in raw mode, which echoes
//! every byte it gets), driven over its real socket by test clients speaking the protocol.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use super::*;
use crate::detach::protocol::PiState;

const WITHIN: Duration = Duration::from_secs(10);

/// A session serving `script` (run by `sh -c`) on a socket in a temporary directory.
struct TestSession {
    dir: tempfile::TempDir,
    socket: PathBuf,
    served: JoinHandle<Result<i32>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestSession {
    fn start(script: &str) -> TestSession {
        Self::start_within(script, WITHIN)
    }

    /// Like [`TestSession::start`], ending when nobody attached within `first_attach_within`.
    fn start_within(script: &str, first_attach_within: Duration) -> TestSession {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("socket");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let script = script.to_owned();
        let cwd = dir.path().to_path_buf();
        let options = ServerOptions {
            status: Status {
                name: "test".into(),
                pid: std::process::id(),
                cwd: cwd.display().to_string(),
                started_ms: 1,
                pi: PiState::Starting,
                attached: false,
            },
            listener,
            program: Box::new(move |first: &FirstAttach| SpawnSpec {
                program: "sh".into(),
                args: vec!["-c".into(), script.into()],
                env: vec![],
                cwd,
                rows: first.rows,
                cols: first.cols,
            }),
            first_attach_within,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve(options, async move {
            let _ = stopped.await;
        }));
        TestSession {
            dir,
            socket,
            served,
            stop: Some(stop),
        }
    }

    async fn status(&self) -> Status {
        let mut client = TestClient::connect(&self.socket, Role::Status).await;
        match client.next().await {
            Some(Frame::Control(Control::Status(status))) => status,
            other => panic!("expected a status, got {other:?}"),
        }
    }

    /// Waits until the status says nobody is attached.
    async fn wait_detached(&self) {
        crate::test_wait::eventually_async("detached when the client left", WITHIN, async || {
            !self.status().await.attached
        })
        .await;
    }

    /// Waits for the session to end on its own (never asked to stop); returns the exit code.
    async fn ended(mut self) -> i32 {
        // Held, not dropped: a dropped sender would stop the session like SIGTERM.
        let _stop = self.stop.take();
        tokio::time::timeout(WITHIN, self.served)
            .await
            .expect("the session ends")
            .unwrap()
            .unwrap()
    }

    /// SIGTERM's way: returns the exit code.
    async fn terminate(mut self) -> i32 {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WITHIN + STOP_GRACE, self.served)
            .await
            .expect("the session ends")
            .unwrap()
            .unwrap()
    }
}

/// A peer on the session's socket.
struct TestClient {
    frames: FrameReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
}

impl TestClient {
    async fn connect(socket: &Path, role: Role) -> TestClient {
        let stream = UnixStream::connect(socket).await.unwrap();
        let (read, write) = stream.into_split();
        let mut client = TestClient {
            frames: FrameReader::new(read, "the test session"),
            write,
        };
        client
            .send(Frame::Control(Control::Hello {
                version: VERSION,
                role,
            }))
            .await;
        client
    }

    async fn attach(socket: &Path, rows: u16, cols: u16) -> TestClient {
        let role = Role::Attach {
            rows,
            cols,
            keyboard: Keyboard::Kitty,
            term: Some("xterm-256color".into()),
        };
        TestClient::connect(socket, role).await
    }

    async fn send(&mut self, frame: Frame) {
        write_frame(&mut self.write, &frame).await.unwrap();
    }

    /// The next frame, `None` at the end of the connection.
    async fn next(&mut self) -> Option<Frame> {
        tokio::time::timeout(WITHIN, self.frames.next())
            .await
            .expect("a frame in time")
            .unwrap()
    }

    /// Reads output until it holds `needle`; returns everything read.
    async fn output_until(&mut self, needle: &[u8]) -> Vec<u8> {
        let mut seen = Vec::new();
        while !seen.windows(needle.len()).any(|w| w == needle) {
            match self.next().await {
                Some(Frame::Output(bytes)) => seen.extend(bytes),
                other => panic!(
                    "expected output holding {:?}, got {other:?} after {:?}",
                    String::from_utf8_lossy(needle),
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
        seen
    }

    /// The next frame, which must be the session's exit: its code and message.
    async fn exit(&mut self) -> (i32, Option<String>) {
        match self.next().await {
            Some(Frame::Control(Control::Exit { code, message })) => (code, message),
            other => panic!("expected the exit code, got {other:?}"),
        }
    }
}

/// `cat` echoing raw bytes back; `stty` first so the line discipline passes every byte.
const ECHO: &str = "stty raw -echo; echo READY; exec cat";

#[tokio::test]
async fn an_attach_takes_over_and_the_first_client_is_told_and_let_go() {
    let session = TestSession::start(ECHO);
    let mut first = TestClient::attach(&session.socket, 24, 80).await;
    first.output_until(b"READY").await;
    first.send(Frame::Input(b"from-first".to_vec())).await;
    first.output_until(b"from-first").await;
    assert!(session.status().await.attached);

    let mut second = TestClient::attach(&session.socket, 30, 100).await;
    match first.next().await {
        Some(Frame::Control(Control::Detached { reason, message })) => {
            assert_eq!(reason, DetachReason::TakenOver);
            assert_eq!(
                message,
                "[session test was attached from another terminal; this one is detached]"
            );
        }
        other => panic!("the first client is told, got {other:?}"),
    }
    assert_eq!(first.next().await, None, "and let go");
    second.send(Frame::Input(b"from-second".to_vec())).await;
    second.output_until(b"from-second").await;
    // The first client's input goes nowhere now.
    let _ = write_frame(&mut first.write, &Frame::Input(b"late".to_vec())).await;
    second.send(Frame::Input(b"mark".to_vec())).await;
    let seen = second.output_until(b"mark").await;
    assert!(!seen.windows(4).any(|w| w == b"late"), "{seen:?}");
    assert!(session.status().await.attached);

    drop(second);
    session.wait_detached().await;
    // The program runs on while nobody is attached; a new client finds it.
    let mut third = TestClient::attach(&session.socket, 24, 80).await;
    third.send(Frame::Input(b"still-here".to_vec())).await;
    third.output_until(b"still-here").await;
    let code = session.terminate().await;
    assert_eq!(code, 128 + 1, "cat ended by SIGHUP");
    // The attached client gets the exit code.
    assert_eq!(
        third.exit().await,
        (
            129,
            Some("the session process was asked to stop".to_string())
        )
    );
}

#[tokio::test]
async fn every_byte_value_paste_and_kitty_keys_reach_the_program_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("received");
    let mut sent: Vec<u8> = (0..=255u8).collect();
    sent.extend_from_slice(b"\x1b[200~pasted\ntext\x1b[201~");
    sent.extend_from_slice(b"\x1b[97;5u\x1b[13;2u\x1b[57441;2u");
    let script = format!(
        "stty raw -echo; echo READY; head -c {} > '{}'; echo DONE",
        sent.len(),
        out.display()
    );
    let session = TestSession::start(&script);
    let mut client = TestClient::attach(&session.socket, 24, 80).await;
    client.output_until(b"READY").await;
    // In pieces, as a terminal delivers them.
    for piece in sent.chunks(7) {
        client.send(Frame::Input(piece.to_vec())).await;
    }
    client.output_until(b"DONE").await;
    assert_eq!(std::fs::read(&out).unwrap(), sent);
    match client.next().await {
        Some(Frame::Output(_)) | None => {}
        Some(Frame::Control(Control::Exit { code, .. })) => assert_eq!(code, 0),
        other => panic!("{other:?}"),
    }
    let _ = session.served.await;
}

#[tokio::test]
async fn resize_reaches_the_program_s_terminal() {
    let session = TestSession::start(
        "stty raw -echo; trap 'stty size; echo RESIZED' WINCH; stty size; echo READY; \
         while :; do sleep 0.05; done",
    );
    let mut client = TestClient::attach(&session.socket, 24, 80).await;
    let start = client.output_until(b"READY").await;
    assert!(String::from_utf8_lossy(&start).contains("24 80"));
    client
        .send(Frame::Control(Control::Resize {
            rows: 40,
            cols: 120,
        }))
        .await;
    let seen = client.output_until(b"RESIZED").await;
    assert!(
        String::from_utf8_lossy(&seen).contains("40 120"),
        "{seen:?}"
    );
    session.terminate().await;
}

#[tokio::test]
async fn a_peer_that_sends_garbage_is_dropped_and_the_session_goes_on() {
    let session = TestSession::start(ECHO);
    let mut client = TestClient::attach(&session.socket, 24, 80).await;
    client.output_until(b"READY").await;
    // Not a frame: the connection is dropped, nothing else happens.
    let mut bad = UnixStream::connect(&session.socket).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut bad, &[0x7f, 1, 2, 3, 4, 5])
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(
        WITHIN,
        tokio::io::AsyncReadExt::read_to_end(&mut bad, &mut rest),
    )
    .await
    .expect("closed in time");
    assert!(read.is_ok() && rest.is_empty(), "{read:?} {rest:?}");
    // A control link claimed by someone who is not the workbench is refused.
    let mut impostor = TestClient::connect(&session.socket, Role::Workbench).await;
    assert!(matches!(
        impostor.next().await,
        Some(Frame::Control(Control::Refused { .. }))
    ));
    client.send(Frame::Input(b"still-fine".to_vec())).await;
    client.output_until(b"still-fine").await;
    session.terminate().await;
}

#[tokio::test]
async fn kill_before_anyone_attached_ends_at_once_and_says_so() {
    let session = TestSession::start(ECHO);
    let mut killer = TestClient::connect(&session.socket, Role::Kill).await;
    assert_eq!(
        killer.exit().await,
        (
            0,
            Some("session test was ended by `unipi-tui kill`".to_string())
        )
    );
    assert_eq!(session.terminate().await, 0);
}

#[tokio::test]
async fn a_program_that_exits_while_nobody_is_attached_ends_the_session_with_its_code() {
    // The program waits on a FIFO the test writes once the client has gone.
    let session = TestSession::start("stty raw -echo; echo READY; read line < fifo; exit 7");
    nix::unistd::mkfifo(
        &session.dir.path().join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let mut client = TestClient::attach(&session.socket, 24, 80).await;
    client.output_until(b"READY").await;
    drop(client);
    session.wait_detached().await;
    std::fs::write(session.dir.path().join("fifo"), b"go\n").unwrap();
    assert_eq!(session.ended().await, 7);
}

#[tokio::test]
async fn a_session_nobody_attaches_to_ends_without_starting_its_program() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let script = format!("touch '{}'; exec cat", started.display());
    let session = TestSession::start_within(&script, Duration::from_millis(200));
    assert_eq!(session.ended().await, 1, "the launcher never attached");
    assert!(!started.exists(), "the program never ran");
}
