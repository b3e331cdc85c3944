//! Width-aware string fitting shared by the widgets: measuring in terminal columns, cutting the end
//! off with an ellipsis, or cutting the middle out of a path. Widths come from ratatui's own
//! measure (`Span::width`) so what we cut is exactly what the buffer will draw.

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
    fn first_line_drops_the_rest_and_control_characters() {
        assert_eq!(first_line("  boom\tbang \nsecond"), "boom bang");
        assert_eq!(first_line(""), "");
    }
}
