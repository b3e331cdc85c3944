//! The worked example's dock rows (the test capability `hello`, in the app's `src/hello/`): one
//! row per wave so far, newest first, each with a one-line detail. Like every dock widget it
//! turns a plain model (here a count) into the dock's generic [`Section`].

use crate::dock::{Body, Detail, Field, Fit, Paragraph, Row, Section, Status, Summary};
use crate::footer::{ProgramState, Role};

/// Hello's section of the dock after `waves` waves.
pub fn section(waves: u64) -> Section {
    Section {
        title: "hello".to_owned(),
        label: "waves".to_owned(),
        summary: Summary::Text(format!("{waves} waved")),
        empty: "No waves yet.".to_owned(),
        hidden: "No waves yet.".to_owned(),
        rows: (1..=waves).rev().map(row).collect(),
    }
}

/// Wave `number` as a row.
fn row(number: u64) -> Row {
    let role = Role::Status(ProgramState::Done);
    Row {
        id: format!("hello-{number}"),
        status: Status {
            glyph: "~",
            label: "waved",
            role,
        },
        status_text: "waved".to_owned(),
        name: format!("wave {number}"),
        tag: format!("hello-{number}"),
        finished: true,
        detail: Detail {
            title: format!("hello: wave {number}"),
            subtitle: format!("hello-{number}"),
            fields: vec![Field::text("Status", "waved", role)],
            body: Body {
                name: "Greeting",
                empty: "nothing said".to_owned(),
                paragraphs: vec![Paragraph {
                    head: "",
                    text: "Hello!".to_owned(),
                    role: Role::Text,
                    fit: Fit::Cut,
                }],
            },
        },
        ..Row::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_wave_newest_first() {
        assert!(section(0).rows.is_empty());
        let names: Vec<String> = section(2).rows.into_iter().map(|row| row.name).collect();
        assert_eq!(names, ["wave 2", "wave 1"]);
    }
}
