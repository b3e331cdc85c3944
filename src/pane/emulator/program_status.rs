//! The Program Status protocol (OSC 7501): a program tells its terminal whether it is idle,
//! working, blocked on the user, done or failed. Pi 1.x sends it once the terminal answers the
//! support query; the workbench shows it in its footer and uses `blocked` for notifications.
//!
//! Wire format (Pi's `program-status.js`, spec at superlogical.com/rex/docs/build/program-status):
//! `ESC ] 7501 ; key=value:key=value… ST` with keys `state` (required), `app`
//! (`[A-Za-z0-9_.+-]{1,32}`), `kind` and `msg` (base64 UTF-8 text). `state=clear` removes the
//! status. The support query is `ESC ] 7501 ; ?…`. Unknown keys are skipped so later spec
//! revisions still parse; a known key with a bad value makes the whole report malformed.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The latest status a program reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramStatus {
    pub state: ProgramState,
    /// The reporting program's short name, e.g. `pi`.
    pub app: Option<String>,
    /// What a `blocked` program waits for (free-form, e.g. `input`).
    pub kind: Option<String>,
    /// Decoded `msg`: a short human-readable line.
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramState {
    Idle,
    Working,
    Blocked,
    Done,
    Error,
}

/// One parsed OSC 7501 body (the part after `7501;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ProgramStatusMessage {
    /// `?…`: the support query; a supporting terminal echoes the body.
    Query,
    Report(ProgramStatus),
    /// `state=clear`.
    Clear,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ProgramStatusError {
    #[error("no state")]
    MissingState,
    #[error("unknown state {0:?}")]
    UnknownState(String),
    #[error("app name {0:?} is not [A-Za-z0-9_.+-]{{1,32}}")]
    BadApp(String),
    #[error("msg is not base64 of UTF-8 text")]
    BadMessage,
    #[error("pair {0:?} has no '='")]
    BadPair(String),
}

/// Parses the body after `7501;`.
pub(super) fn parse(body: &str) -> Result<ProgramStatusMessage, ProgramStatusError> {
    if body.starts_with('?') {
        return Ok(ProgramStatusMessage::Query);
    }
    let mut state = None;
    let mut app = None;
    let mut kind = None;
    let mut message = None;
    for pair in body.split(':').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| ProgramStatusError::BadPair(pair.to_owned()))?;
        match key {
            "state" => state = Some(value),
            "app" if is_app_name(value) => app = Some(value.to_owned()),
            "app" => return Err(ProgramStatusError::BadApp(value.to_owned())),
            "kind" if !value.is_empty() => kind = Some(value.to_owned()),
            "msg" => message = Some(decode_message(value)?),
            _ => {} // a later revision's key
        }
    }
    let state = match state.ok_or(ProgramStatusError::MissingState)? {
        "clear" => return Ok(ProgramStatusMessage::Clear),
        "idle" => ProgramState::Idle,
        "working" => ProgramState::Working,
        "blocked" => ProgramState::Blocked,
        "done" => ProgramState::Done,
        "error" => ProgramState::Error,
        other => return Err(ProgramStatusError::UnknownState(other.to_owned())),
    };
    Ok(ProgramStatusMessage::Report(ProgramStatus {
        state,
        app,
        kind,
        message: message.filter(|text| !text.is_empty()),
    }))
}

fn is_app_name(value: &str) -> bool {
    (1..=32).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.+-".contains(&b))
}

fn decode_message(value: &str) -> Result<String, ProgramStatusError> {
    // Pi pads (Node's Buffer base64); accept unpadded too, as other senders may strip it.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let bytes = LENIENT
        .decode(value)
        .map_err(|_| ProgramStatusError::BadMessage)?;
    String::from_utf8(bytes).map_err(|_| ProgramStatusError::BadMessage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    fn report(
        state: ProgramState,
        app: Option<&str>,
        kind: Option<&str>,
        message: Option<&str>,
    ) -> ProgramStatusMessage {
        ProgramStatusMessage::Report(ProgramStatus {
            state,
            app: app.map(str::to_owned),
            kind: kind.map(str::to_owned),
            message: message.map(str::to_owned),
        })
    }

    #[test]
    fn parses_reports_queries_and_rejects_malformed_ones() {
        use ProgramState::*;
        use ProgramStatusError::*;
        // "Reading files" and "Allow rm -rf?" in base64, as Pi's formatProgramStatus writes them.
        let cases: Vec<(&str, Result<ProgramStatusMessage, ProgramStatusError>)> = vec![
            ("?", Ok(ProgramStatusMessage::Query)),
            ("?version=2", Ok(ProgramStatusMessage::Query)),
            (
                "state=working:app=pi",
                Ok(report(Working, Some("pi"), None, None)),
            ),
            ("state=idle", Ok(report(Idle, None, None, None))),
            (
                "state=done:app=pi",
                Ok(report(Done, Some("pi"), None, None)),
            ),
            (
                "state=error:app=pi:msg=UmVhZGluZyBmaWxlcw==",
                Ok(report(Error, Some("pi"), None, Some("Reading files"))),
            ),
            (
                "state=blocked:app=pi:kind=input:msg=QWxsb3cgcm0gLXJmPw==",
                Ok(report(
                    Blocked,
                    Some("pi"),
                    Some("input"),
                    Some("Allow rm -rf?"),
                )),
            ),
            (
                "state=working:msg=UmVhZGluZyBmaWxlcw",
                Ok(report(Working, None, None, Some("Reading files"))),
            ),
            (
                "state=working:future=1",
                Ok(report(Working, None, None, None)),
            ),
            (
                "app=pi:state=idle",
                Ok(report(Idle, Some("pi"), None, None)),
            ),
            ("state=clear", Ok(ProgramStatusMessage::Clear)),
            ("app=pi", Err(MissingState)),
            ("", Err(MissingState)),
            ("state=sleeping", Err(UnknownState("sleeping".into()))),
            ("state=idle:app=bad app", Err(BadApp("bad app".into()))),
            ("state=idle:app=", Err(BadApp(String::new()))),
            ("state=idle:msg=!!!", Err(BadMessage)),
            ("state=idle:msg=//79", Err(BadMessage)), // valid base64, not UTF-8
            ("state", Err(BadPair("state".into()))),
        ];
        check_table(cases, |body| parse(body));
    }
}
