//! A text being typed into a view (an answer to a question, a setting's value): the text and a
//! cursor counted in characters, and the usual line-editing moves — insert, delete either side,
//! move by character or word, jump to either end, cut to either end, delete the word before —
//! as [`EditAction`]s a view binds to keys from its own key table. Pasted text keeps its line
//! breaks (`\r\n` and `\r` become `\n`), so a pasted snippet reaches its reader as it was.

/// One editing move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditAction {
    Left,
    Right,
    WordLeft,
    WordRight,
    Home,
    End,
    Backspace,
    Delete,
    DeleteWordBack,
    /// Cut from the start to the cursor (Ctrl+U).
    KillToStart,
    /// Cut from the cursor to the end (Ctrl+K).
    KillToEnd,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineEdit {
    text: String,
    /// In characters from the start of `text`.
    cursor: usize,
}

impl LineEdit {
    /// `text` with the cursor at its end.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let cursor = text.chars().count();
        LineEdit { text, cursor }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn insert_char(&mut self, ch: char) {
        let at = self.byte_at(self.cursor);
        self.text.insert(at, ch);
        self.cursor += 1;
    }

    /// Inserts pasted text at the cursor, line breaks normalised to `\n` and other control
    /// characters (escape sequences a terminal let through) dropped.
    pub fn insert_str(&mut self, pasted: &str) {
        let clean: String = pasted
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .map(|ch| if ch == '\t' { ' ' } else { ch })
            .filter(|ch| *ch == '\n' || !ch.is_control())
            .collect();
        let at = self.byte_at(self.cursor);
        self.text.insert_str(at, &clean);
        self.cursor += clean.chars().count();
    }

    pub fn apply(&mut self, action: EditAction) {
        let length = self.text.chars().count();
        match action {
            EditAction::Left => self.cursor = self.cursor.saturating_sub(1),
            EditAction::Right => self.cursor = (self.cursor + 1).min(length),
            EditAction::WordLeft => self.cursor = self.word_start_before(self.cursor),
            EditAction::WordRight => self.cursor = self.word_end_after(self.cursor),
            EditAction::Home => self.cursor = 0,
            EditAction::End => self.cursor = length,
            EditAction::Backspace if self.cursor > 0 => {
                self.remove(self.cursor - 1, self.cursor);
                self.cursor -= 1;
            }
            EditAction::Delete if self.cursor < length => self.remove(self.cursor, self.cursor + 1),
            EditAction::Backspace | EditAction::Delete => {}
            EditAction::DeleteWordBack => {
                let start = self.word_start_before(self.cursor);
                self.remove(start, self.cursor);
                self.cursor = start;
            }
            EditAction::KillToStart => {
                self.remove(0, self.cursor);
                self.cursor = 0;
            }
            EditAction::KillToEnd => self.remove(self.cursor, length),
        }
    }

    /// Removes characters `from..to`.
    fn remove(&mut self, from: usize, to: usize) {
        let (start, end) = (self.byte_at(from), self.byte_at(to));
        self.text.replace_range(start..end, "");
    }

    /// Where the word before `at` starts (spaces before it skipped), in characters.
    fn word_start_before(&self, at: usize) -> usize {
        let chars: Vec<char> = self.text.chars().take(at).collect();
        let mut index = chars.len();
        while index > 0 && chars[index - 1].is_whitespace() {
            index -= 1;
        }
        while index > 0 && !chars[index - 1].is_whitespace() {
            index -= 1;
        }
        index
    }

    /// Where the word after `at` ends (spaces before it skipped), in characters.
    fn word_end_after(&self, at: usize) -> usize {
        let chars: Vec<char> = self.text.chars().collect();
        let mut index = at.min(chars.len());
        while index < chars.len() && chars[index].is_whitespace() {
            index += 1;
        }
        while index < chars.len() && !chars[index].is_whitespace() {
            index += 1;
        }
        index
    }

    /// The byte offset of character `index` (the end when past the last).
    fn byte_at(&self, index: usize) -> usize {
        self.text
            .char_indices()
            .nth(index)
            .map_or(self.text.len(), |(at, _)| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text with `|` where the cursor is.
    fn shown(edit: &LineEdit) -> String {
        let mut text: Vec<char> = edit.text().chars().collect();
        text.insert(edit.cursor(), '|');
        text.into_iter().collect()
    }

    #[test]
    fn editing_moves_act_on_characters_and_words() {
        let mut edit = LineEdit::new("héllo wörld");
        let steps = [
            (EditAction::WordLeft, "héllo |wörld"),
            (EditAction::Backspace, "héllo|wörld"),
            (EditAction::Left, "héll|owörld"),
            (EditAction::Delete, "héll|wörld"),
            (EditAction::WordRight, "héllwörld|"),
            (EditAction::Home, "|héllwörld"),
            (EditAction::Backspace, "|héllwörld"),
            (EditAction::Right, "h|éllwörld"),
            (EditAction::KillToEnd, "h|"),
            (EditAction::End, "h|"),
            (EditAction::Delete, "h|"),
        ];
        for (action, want) in steps {
            edit.apply(action);
            assert_eq!(shown(&edit), want, "{action:?}");
        }
        let mut edit = LineEdit::new("one two  three");
        edit.apply(EditAction::DeleteWordBack);
        assert_eq!(shown(&edit), "one two  |");
        edit.apply(EditAction::DeleteWordBack);
        assert_eq!(shown(&edit), "one |");
        edit.apply(EditAction::Left);
        edit.apply(EditAction::KillToStart);
        assert_eq!(shown(&edit), "| ");
    }

    #[test]
    fn typing_and_pasting_insert_at_the_cursor_keeping_line_breaks() {
        let mut edit = LineEdit::default();
        assert!(edit.is_empty());
        for ch in "ac".chars() {
            edit.insert_char(ch);
        }
        edit.apply(EditAction::Left);
        edit.insert_char('b');
        assert_eq!(shown(&edit), "ab|c");
        edit.insert_str("1\r\n2\r3\t4\x1b[31m");
        assert_eq!(edit.text(), "ab1\n2\n3 4[31mc");
        assert_eq!(edit.cursor(), 13);
    }
}
