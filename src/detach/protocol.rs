//! The session socket's wire format: small frames, so the relay stays a byte pump and control
//! messages can never be mistaken for terminal bytes.
//!
//! A frame is a one-byte type, a four-byte big-endian payload length and the payload. Terminal
//! bytes travel as they are — `Input` (client → session) and `Output` (session → client) — and
//! everything else is one `Control` frame holding a JSON [`Control`] message (hello, resize,
//! detach, takeover, exit code, `ls` status, and the workbench's control link). A payload is at
//! most [`MAX_PAYLOAD`] bytes; the relay sends chunks of at most 64 KiB.
//!
//! [`FrameDecoder`] never panics on what a peer sends: an unknown type, an oversized length, a
//! connection closed in the middle of a frame or a control message that does not parse is a
//! [`FrameError`] that names the peer, and the connection is dropped.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// Bumped when a frame or control message changes incompatibly.
pub(crate) const VERSION: u32 = 1;
/// The largest payload a peer may send.
pub(crate) const MAX_PAYLOAD: usize = 1 << 20;
/// Type byte and length.
const HEADER: usize = 5;

const INPUT: u8 = 1;
const OUTPUT: u8 = 2;
const CONTROL: u8 = 3;

/// One frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Bytes the user typed or pasted, for the workbench's terminal.
    Input(Vec<u8>),
    /// Bytes the workbench wrote to its terminal, for the user's.
    Output(Vec<u8>),
    Control(Control),
}

/// How the attaching terminal reports modified keys (the client found out before attaching).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Keyboard {
    Kitty,
    ModifyOtherKeys,
    Legacy,
}

/// What a connection is for; the first frame on every connection says it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Role {
    /// A terminal attaches (taking over from an attached one).
    Attach {
        rows: u16,
        cols: u16,
        keyboard: Keyboard,
        /// The terminal's `TERM`, for the workbench started on the first attach.
        term: Option<String>,
    },
    /// `unipi-tui ls`: one [`Control::Status`] answer, then the connection closes.
    Status,
    /// `unipi-tui kill`: end the session; answered with [`Control::Exit`] once it has ended.
    Kill,
    /// The workbench running inside the session: its control link.
    Workbench,
}

/// What Pi is doing, as the workbench knows it from the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiState {
    /// The workbench has not said yet (it is starting, or runs without its bridge).
    Starting,
    Idle,
    Working,
    /// A question or one of Pi's dialogs waits for the user.
    Waiting,
}

impl PiState {
    pub fn label(self) -> &'static str {
        match self {
            PiState::Starting => "starting",
            PiState::Idle => "idle",
            PiState::Working => "working",
            PiState::Waiting => "waiting for input",
        }
    }
}

/// Why the session let a client go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DetachReason {
    /// The user pressed the detach key.
    Key,
    /// Another terminal attached.
    TakenOver,
    /// The terminal stopped reading its output.
    TooSlow,
}

/// What `unipi-tui ls` shows of one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub name: String,
    /// The session process.
    pub pid: u32,
    pub cwd: String,
    /// Milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub pi: PiState,
    pub attached: bool,
}

/// A control message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Control {
    /// The first frame of every connection.
    Hello {
        version: u32,
        #[serde(flatten)]
        role: Role,
    },
    /// Client → session: the terminal's new size.
    Resize { rows: u16, cols: u16 },
    /// Session → client: you are detached; `message` is the line to show after restoring the
    /// terminal.
    Detached {
        reason: DetachReason,
        message: String,
    },
    /// Session → client (attached, or `kill`): the session ended with the workbench's exit code.
    Exit { code: i32, message: Option<String> },
    /// Session → any: the connection is refused, and why.
    Refused { message: String },
    /// Session → `ls`.
    Status(Status),
    /// Session → workbench: a terminal attached (again): write `marker`, set up every mode for
    /// `keyboard` and repaint everything.
    Attached { generation: u64, keyboard: Keyboard },
    /// Session → workbench: no terminal is attached any more.
    Away,
    /// Workbench → session: the user pressed the detach key.
    Detach,
    /// Workbench → session: what Pi does now.
    Pi { state: PiState },
}

/// The bytes the workbench writes to its terminal right before re-setting it up for attach
/// `generation`: the session forwards what follows them, so nothing half-written before the
/// new terminal attached reaches it. An OSC no terminal knows, ignored if it ever gets through.
pub fn attach_marker(generation: u64) -> Vec<u8> {
    format!("\x1b]7796;unipi-tui-attached;{generation}\x07").into_bytes()
}

/// Why a frame could not be read. Every variant names the peer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("{peer} sent a frame of unknown type {kind:#04x}")]
    UnknownType { peer: String, kind: u8 },
    #[error("{peer} sent a frame of {len} bytes, more than the {MAX_PAYLOAD} allowed")]
    TooLarge { peer: String, len: usize },
    #[error("{peer} closed the connection in the middle of a frame ({got} of {want} bytes)")]
    Short {
        peer: String,
        got: usize,
        want: usize,
    },
    #[error("{peer} sent a control message that is not valid: {detail}")]
    Malformed { peer: String, detail: String },
    #[error("reading from {peer}: {source}")]
    Io {
        peer: String,
        #[source]
        source: std::io::Error,
    },
}

impl Frame {
    /// The frame on the wire.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (kind, payload) = match self {
            Frame::Input(bytes) => (INPUT, std::borrow::Cow::Borrowed(bytes.as_slice())),
            Frame::Output(bytes) => (OUTPUT, std::borrow::Cow::Borrowed(bytes.as_slice())),
            Frame::Control(control) => (
                CONTROL,
                // Serializing plain data with string keys cannot fail.
                std::borrow::Cow::Owned(serde_json::to_vec(control).unwrap_or_default()),
            ),
        };
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.push(kind);
        out.extend_from_slice(
            &u32::try_from(payload.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        out.extend_from_slice(&payload);
        out
    }
}

/// Turns received bytes into frames, in order.
#[derive(Debug, Default)]
pub(crate) struct FrameDecoder {
    buf: Vec<u8>,
}

impl FrameDecoder {
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` until one has arrived.
    pub(crate) fn next_frame(&mut self, peer: &str) -> Result<Option<Frame>, FrameError> {
        let Some(&kind) = self.buf.first() else {
            return Ok(None);
        };
        if !matches!(kind, INPUT | OUTPUT | CONTROL) {
            return Err(FrameError::UnknownType {
                peer: peer.to_owned(),
                kind,
            });
        }
        let Some(len) = self.buf.get(1..HEADER) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        if len > MAX_PAYLOAD {
            return Err(FrameError::TooLarge {
                peer: peer.to_owned(),
                len,
            });
        }
        if self.buf.len() < HEADER + len {
            return Ok(None);
        }
        let payload: Vec<u8> = self.buf.drain(..HEADER + len).skip(HEADER).collect();
        Ok(Some(match kind {
            INPUT => Frame::Input(payload),
            OUTPUT => Frame::Output(payload),
            _ => Frame::Control(serde_json::from_slice(&payload).map_err(|err| {
                FrameError::Malformed {
                    peer: peer.to_owned(),
                    detail: err.to_string(),
                }
            })?),
        }))
    }

    /// The connection ended: an error if it ended inside a frame.
    pub(crate) fn finish(&self, peer: &str) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let want = match self.buf.get(1..HEADER) {
            Some(len) => HEADER + u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize,
            None => HEADER,
        };
        Err(FrameError::Short {
            peer: peer.to_owned(),
            got: self.buf.len(),
            want,
        })
    }
}

/// Reads frames from one peer.
pub(crate) struct FrameReader<R> {
    reader: R,
    decoder: FrameDecoder,
    peer: String,
    chunk: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(reader: R, peer: impl Into<String>) -> Self {
        FrameReader {
            reader,
            decoder: FrameDecoder::default(),
            peer: peer.into(),
            chunk: vec![0; 64 * 1024],
        }
    }

    /// The next frame; `None` when the peer closed the connection between frames.
    pub(crate) async fn next(&mut self) -> Result<Option<Frame>, FrameError> {
        loop {
            if let Some(frame) = self.decoder.next_frame(&self.peer)? {
                return Ok(Some(frame));
            }
            let n = self
                .reader
                .read(&mut self.chunk)
                .await
                .map_err(|source| FrameError::Io {
                    peer: self.peer.clone(),
                    source,
                })?;
            if n == 0 {
                self.decoder.finish(&self.peer)?;
                return Ok(None);
            }
            self.decoder.push(&self.chunk[..n]);
        }
    }
}

/// Writes one frame.
pub(crate) async fn write_frame(
    writer: &mut (impl AsyncWrite + Unpin),
    frame: &Frame,
) -> std::io::Result<()> {
    writer.write_all(&frame.encode()).await?;
    writer.flush().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn all_kinds() -> Vec<Frame> {
        vec![
            Frame::Input((0..=255).collect()),
            Frame::Output(b"\x1b[?1049h hello".to_vec()),
            Frame::Output(Vec::new()),
            Frame::Control(Control::Hello {
                version: VERSION,
                role: Role::Attach {
                    rows: 40,
                    cols: 120,
                    keyboard: Keyboard::Kitty,
                    term: Some("xterm-kitty".into()),
                },
            }),
            Frame::Control(Control::Hello {
                version: VERSION,
                role: Role::Status,
            }),
            Frame::Control(Control::Resize { rows: 1, cols: 2 }),
            Frame::Control(Control::Detached {
                reason: DetachReason::TakenOver,
                message: "taken".into(),
            }),
            Frame::Control(Control::Exit {
                code: 130,
                message: None,
            }),
            Frame::Control(Control::Status(Status {
                name: "a".into(),
                pid: 7,
                cwd: "/w".into(),
                started_ms: 1,
                pi: PiState::Waiting,
                attached: false,
            })),
            Frame::Control(Control::Attached {
                generation: 3,
                keyboard: Keyboard::ModifyOtherKeys,
            }),
            Frame::Control(Control::Pi {
                state: PiState::Working,
            }),
        ]
    }

    #[test]
    fn every_frame_round_trips_even_split_into_single_bytes() {
        let frames = all_kinds();
        let wire: Vec<u8> = frames.iter().flat_map(Frame::encode).collect();
        let mut decoder = FrameDecoder::default();
        let mut got = Vec::new();
        for byte in wire {
            decoder.push(&[byte]);
            while let Some(frame) = decoder.next_frame("test peer").unwrap() {
                got.push(frame);
            }
        }
        assert_eq!(got, frames);
        decoder.finish("test peer").unwrap();
    }

    #[test]
    fn bad_frames_are_errors_that_name_the_peer() {
        let peer = "client pid 4242";
        let decode = |bytes: &[u8]| {
            let mut decoder = FrameDecoder::default();
            decoder.push(bytes);
            decoder.next_frame(peer)
        };
        let unknown = decode(&[0x7f, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "client pid 4242 sent a frame of unknown type 0x7f"
        );
        let huge = decode(&[OUTPUT, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert_eq!(
            huge.to_string(),
            format!(
                "client pid 4242 sent a frame of {} bytes, more than the 1048576 allowed",
                u32::MAX
            )
        );
        let mut not_json = vec![CONTROL, 0, 0, 0, 3];
        not_json.extend_from_slice(b"{x}");
        let malformed = decode(&not_json).unwrap_err().to_string();
        assert!(
            malformed.starts_with("client pid 4242 sent a control message that is not valid:"),
            "{malformed}"
        );
        let mut unknown_message = vec![CONTROL, 0, 0, 0, 16];
        unknown_message.extend_from_slice(br#"{"type":"nope"}."#);
        assert!(matches!(
            decode(&unknown_message),
            Err(FrameError::Malformed { .. })
        ));
    }

    #[test]
    fn a_connection_closed_inside_a_frame_is_a_short_frame() {
        let mut decoder = FrameDecoder::default();
        decoder.push(&[INPUT, 0, 0]);
        assert!(decoder.next_frame("session demo").unwrap().is_none());
        assert_eq!(
            decoder.finish("session demo").unwrap_err().to_string(),
            "session demo closed the connection in the middle of a frame (3 of 5 bytes)"
        );
        let mut decoder = FrameDecoder::default();
        decoder.push(&[INPUT, 0, 0, 0, 10, b'a']);
        assert!(decoder.next_frame("session demo").unwrap().is_none());
        assert_eq!(
            decoder.finish("session demo").unwrap_err().to_string(),
            "session demo closed the connection in the middle of a frame (6 of 15 bytes)"
        );
    }

    #[tokio::test]
    async fn the_reader_reads_frames_then_the_end() {
        let frames = all_kinds();
        let wire: Vec<u8> = frames.iter().flat_map(Frame::encode).collect();
        let mut reader = FrameReader::new(wire.as_slice(), "test");
        for frame in &frames {
            assert_eq!(reader.next().await.unwrap().as_ref(), Some(frame));
        }
        assert!(reader.next().await.unwrap().is_none());
        let mut cut = FrameReader::new(&wire[..wire.len() - 1], "the session");
        for _ in 1..frames.len() {
            cut.next().await.unwrap();
        }
        let err = cut.next().await.unwrap_err();
        assert!(matches!(err, FrameError::Short { .. }), "{err}");
    }
}
