//! Width-aware string fitting shared by the widgets: measuring in terminal columns, cutting the end
//! off with an ellipsis, or cutting the middle out of a path — and, for the footer, which may not
//! cut inside a word, the whole-word and whole-directory shortenings it offers as alternatives.
//! Widths come from ratatui's own measure (`Span::width`) so what we cut is exactly what the
//! buffer will draw.

use ratatui::text::Span;

/// The ellipsis that marks cut text; one column wide.
pub const ELLIPSIS: char = '…';

/// Display width of `text` in terminal columns.
pub fn width(text: &str) -> usize {
    Span::raw(text).width()
}

/// `text` cut to at most `max` columns, ending in `…` when something was cut.
pub fn truncate_end(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = char_width(ch);
        if used + w > max - 1 {
            break;
        }
        used += w;
        out.push(ch);
    }
    out.push(ELLIPSIS);
    out
}

/// `text` cut to at most `max` characters, ending in `…` when something was cut. For text a
/// model reads, where characters count, not terminal columns.
pub fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push(ELLIPSIS);
    out
}

/// `text` cut to at most `max` columns by replacing its middle with `…`. The tail keeps the larger
/// share because the end of a path (the directory you are in) says the most.
pub fn truncate_middle(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    if max <= 1 {
        return truncate_end(text, max);
    }
    let budget = max - 1;
    let head_budget = budget / 3;
    let tail_budget = budget - head_budget;

    let mut head = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = char_width(ch);
        if used + w > head_budget {
            break;
        }
        used += w;
        head.push(ch);
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for ch in text.chars().rev() {
        let w = char_width(ch);
        if used + w > tail_budget {
            break;
        }
        used += w;
        tail.push(ch);
    }
    head.push(ELLIPSIS);
    head.extend(tail.into_iter().rev());
    head
}

/// `path` cut to at most `max` columns by replacing whole middle directories with `…`
/// ("~/…/project/unipi-tui"), keeping the first component and as many trailing ones as fit;
/// when not even the last directory fits, falls back to [`truncate_middle`].
pub fn shorten_path(path: &str, max: usize) -> String {
    if width(path) <= max {
        return path.to_owned();
    }
    let components: Vec<&str> = path.split('/').collect();
    if components.len() >= 3 {
        let head = components[0];
        // "head/…" then "/tail" pieces, added from the end while they fit.
        let mut tail = String::new();
        for component in components[1..].iter().rev() {
            let candidate = format!("/{component}{tail}");
            if width(head) + 2 + width(&candidate) > max {
                break;
            }
            tail = candidate;
        }
        if !tail.is_empty() {
            return format!("{head}/{ELLIPSIS}{tail}");
        }
    }
    truncate_middle(path, max)
}

/// `text` broken into lines of at most `max` columns at spaces; a word longer than a line is
/// cut where the line ends. Existing line breaks are kept. Never returns an empty list.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        let mut used = 0;
        for word in paragraph.split(' ') {
            let word_width = width(word);
            let gap = usize::from(!line.is_empty());
            if used + gap + word_width <= max {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += gap + word_width;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            // A word wider than a line: cut it into line-sized pieces.
            for ch in word.chars() {
                let w = char_width(ch);
                if used + w > max && !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push(ch);
                used += w;
            }
        }
        lines.push(line);
    }
    lines
}

/// The ways to show `text` in at most `max` columns without cutting a word, longest first: the
/// text itself if it fits, then ever fewer leading words followed by `…`, down to the first word
/// alone. Empty when not even the first word fits.
pub fn word_forms(text: &str, max: usize) -> Vec<String> {
    let mut forms = Vec::new();
    if width(text) <= max {
        forms.push(text.to_owned());
    }
    let mut heads: Vec<&str> = text
        .char_indices()
        .filter(|&(_, ch)| ch.is_whitespace())
        .map(|(index, _)| text[..index].trim_end())
        .filter(|head| !head.trim_start().is_empty())
        .collect();
    heads.dedup();
    for head in heads.into_iter().rev() {
        let form = format!("{head}{ELLIPSIS}");
        if width(&form) <= max && width(&form) < forms.last().map_or(usize::MAX, |f| width(f)) {
            forms.push(form);
        }
    }
    forms
}

/// The ways to show `path` whole-directory-wise, longest first: the path itself, then with more
/// and more leading directories (after the first component) replaced by one `…`, down to
/// "first/…/last" ("~/src/a/b" → "~/…/a/b" → "~/…/b"). Never cuts inside a name.
pub fn path_forms(path: &str) -> Vec<String> {
    let mut forms = vec![path.to_owned()];
    let components: Vec<&str> = path.split('/').collect();
    if components.len() < 3 {
        return forms;
    }
    let head = components[0];
    for kept in (1..components.len() - 1).rev() {
        let tail = components[components.len() - kept..].join("/");
        forms.push(format!("{head}/{ELLIPSIS}/{tail}"));
    }
    forms
}

/// The first line of `text` with control characters replaced by spaces: what a one-row widget
/// can show of a message it did not write.
pub fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect()
}

fn char_width(ch: char) -> usize {
    let mut utf8 = [0u8; 4];
    width(ch.encode_utf8(&mut utf8))
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrap_breaks_at_spaces_and_cuts_only_words_too_long_for_a_line() {
        let cases: [(&str, usize, &[&str]); 6] = [
            ("one two three", 7, &["one two", "three"]),
            ("one two three", 13, &["one two three"]),
            ("abcdefghij xy", 4, &["abcd", "efgh", "ij", "xy"]),
            ("first\nsecond line", 6, &["first", "second", "line"]),
            ("", 5, &[""]),
            ("日本語のテキスト", 6, &["日本語", "のテキ", "スト"]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "{text:?} at {max}");
            assert!(wrap(text, max).iter().all(|line| width(line) <= max));
        }
    }

    use super::*;

    #[test]
    fn truncate_end_table() {
        let cases = [
            ("hello", 10, "hello"),
            ("hello", 5, "hello"),
            ("hello", 4, "hel…"),
            ("hello", 1, "…"),
            ("hello", 0, ""),
            ("日本語テキスト", 6, "日本…"),
        ];
        for (text, max, want) in cases {
            let got = truncate_end(text, max);
            assert_eq!(got, want, "truncate_end({text:?}, {max})");
            assert!(width(&got) <= max);
        }
    }

    #[test]
    fn truncate_chars_counts_characters_not_columns() {
        // Six columns but three characters: nothing is cut.
        assert_eq!(truncate_chars("日本語", 3), "日本語");
        assert_eq!(truncate_chars("日本語テキスト", 3), "日本…");
        assert_eq!(truncate_chars("héllo wörld", 6), "héllo…");
    }

    #[test]
    fn truncate_middle_table() {
        let cases = [
            ("~/src/unipi-tui", 20, "~/src/unipi-tui"),
            ("~/src/very/long/path/unipi-tui", 16, "~/src…/unipi-tui"),
            ("/a/b/c/d/e/f/g/h", 7, "/a…/g/h"),
            ("abcdef", 1, "…"),
            ("abcdef", 0, ""),
        ];
        for (text, max, want) in cases {
            let got = truncate_middle(text, max);
            assert_eq!(got, want, "truncate_middle({text:?}, {max})");
            assert!(width(&got) <= max);
        }
    }

    #[test]
    fn shorten_path_table() {
        let cases = [
            ("~/src/unipi-tui", 20, "~/src/unipi-tui"),
            (
                "~/src/some/deeply/nested/project/unipi-tui",
                30,
                "~/…/nested/project/unipi-tui",
            ),
            (
                "~/src/some/deeply/nested/project/unipi-tui",
                16,
                "~/…/unipi-tui",
            ),
            ("/srv/some/deeply/nested/app", 15, "/…/nested/app"),
            ("~/src/a-very-long-directory-name", 16, "~/src…ctory-name"),
            ("no-slashes-at-all-here", 10, "no-…l-here"),
        ];
        for (path, max, want) in cases {
            let got = shorten_path(path, max);
            assert_eq!(got, want, "shorten_path({path:?}, {max})");
            assert!(width(&got) <= max);
        }
    }

    #[test]
    fn word_forms_table() {
        let cases: [(&str, usize, &[&str]); 7] = [
            (
                "Sign in to continue",
                40,
                &["Sign in to continue", "Sign in to…", "Sign in…", "Sign…"],
            ),
            ("Sign in to continue", 10, &["Sign in…", "Sign…"]),
            ("Sign in to continue", 5, &["Sign…"]),
            ("Sign in to continue", 4, &[]),
            ("unbreakable-word", 8, &[]),
            ("two  spaces", 20, &["two  spaces", "two…"]),
            ("", 0, &[""]),
        ];
        for (text, max, want) in cases {
            let got = word_forms(text, max);
            assert_eq!(got, want, "word_forms({text:?}, {max})");
            assert!(got.iter().all(|form| width(form) <= max));
        }
    }

    #[test]
    fn path_forms_table() {
        let cases: [(&str, &[&str]); 4] = [
            (
                "~/src/some/project",
                &["~/src/some/project", "~/…/some/project", "~/…/project"],
            ),
            ("/srv/app", &["/srv/app", "/…/app"]),
            ("~/src", &["~/src"]),
            ("plain", &["plain"]),
        ];
        for (path, want) in cases {
            assert_eq!(path_forms(path), want, "path_forms({path:?})");
        }
    }

    #[test]
    fn first_line_drops_the_rest_and_control_characters() {
        assert_eq!(first_line("  boom\tbang \nsecond"), "boom bang");
        assert_eq!(first_line(""), "");
    }
}
