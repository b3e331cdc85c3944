//! The picker's filter: a query matches a model when its characters appear in order in the
//! model's `provider/id name` (case-insensitive, spaces in the query ignored), as in fzf or
//! Pi's own model selector. Matches are ranked by a small score — characters in a run, at the
//! start of a word (after `/`, `-`, `_`, `.`, `:` or a space), at the very start — so `hk4`
//! finds `claude-haiku-4` and `son` ranks `claude-sonnet` above `openai/gpt-4o-mini-search`.
//!
//! The picker ranks what it can use first ([`rank_usable_first`]): a model Pi has no key for
//! cannot be put in a slot, so however well it matches (`mini` matches `minimax/…` at its very
//! start) it comes after every usable match.

/// The score of `query` against `candidate`, or `None` when it does not match. An empty query
/// matches everything with score 0.
pub(crate) fn score(query: &str, candidate: &str) -> Option<i64> {
    let wanted: Vec<char> = query
        .chars()
        .filter(|ch| !ch.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if wanted.is_empty() {
        return Some(0);
    }
    let text: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
    let mut total = 0i64;
    let mut next = 0usize;
    let mut previous: Option<usize> = None;
    for want in wanted {
        let found = (next..text.len()).find(|&at| text[at] == want)?;
        let mut points = 1;
        if previous.is_some_and(|prev| prev + 1 == found) {
            points += 5;
        }
        if found == 0 {
            points += 8;
        } else if matches!(text[found - 1], '/' | '-' | '_' | '.' | ':' | ' ') {
            points += 4;
        }
        if let Some(prev) = previous {
            // A gap costs a little, so tight matches win among equals.
            points -= i64::try_from((found - prev - 1).min(10)).unwrap_or(10) / 3;
        }
        total += points;
        previous = Some(found);
        next = found + 1;
    }
    Some(total)
}

/// The indices of `candidates` that match `query`, best first (ties keep their order).
pub(crate) fn rank<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
    let mut scored: Vec<(i64, usize)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(index, candidate)| score(query, candidate).map(|score| (score, index)))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, index)| index).collect()
}

/// [`rank`] over `(text, usable)` candidates, with every usable match before every unusable
/// one (each group best first, ties in their order).
pub(crate) fn rank_usable_first<'a>(
    query: &str,
    candidates: impl IntoIterator<Item = (&'a str, bool)>,
) -> Vec<usize> {
    let (texts, usable): (Vec<&str>, Vec<bool>) = candidates.into_iter().unzip();
    let mut ranked = rank(query, texts);
    // Stable: the score order holds within each group.
    ranked.sort_by_key(|&index| !usable[index]);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn matching_table() {
        let cases = [
            ("", "anything", true),
            ("hk4", "anthropic/claude-haiku-4-5", true),
            ("HAIKU", "anthropic/claude-haiku-4-5", true),
            ("so 4", "anthropic/claude-sonnet-4", true),
            ("4hk", "anthropic/claude-haiku-4-5", false),
            ("gptx", "openai/gpt-4o", false),
        ];
        for (query, candidate, matches) in cases {
            assert_eq!(
                score(query, candidate).is_some(),
                matches,
                "{query:?} {candidate:?}"
            );
        }
    }

    #[test]
    fn tight_and_word_start_matches_rank_first() {
        let models = [
            "x/personal",
            "anthropic/claude-sonnet-4",
            "unipi-scripted/small (scripted)",
            "unipi-scripted/big (scripted)",
        ];
        assert_eq!(rank("son", models), [1, 0]);
        assert_eq!(rank("gpt4", ["x/g-p-t-4", "openai/gpt-4o"]), [1, 0]);
        assert_eq!(rank("small", models), [2]);
        assert_eq!(rank("scripted", models), [2, 3]);
        assert_eq!(rank("", models), [0, 1, 2, 3]);
    }

    /// Models as Pi lists them (`provider/id name`), with whether Pi has a key for each.
    const MODELS: [(&str, bool); 7] = [
        ("minimax/MiniMax-M2 MiniMax-M2", false),
        ("minimax/MiniMax-M2.1 MiniMax-M2.1", false),
        ("openai/gpt-4o-mini GPT-4o mini", true),
        ("openai/gpt-5-mini GPT-5 Mini", true),
        ("google/gemini-2.5-flash Gemini 2.5 Flash", true),
        ("anthropic/claude-haiku-4-5 Claude Haiku 4.5", false),
        ("anthropic/claude-sonnet-4-5 Claude Sonnet 4.5", true),
    ];

    #[test]
    fn usable_models_rank_above_better_matches_without_a_key() {
        // (query, the models' order, best first, by their index in MODELS)
        let cases: [(&str, &[usize]); 7] = [
            // `minimax` matches `mini` at its very start, but has no key.
            ("mini", &[2, 3, 4, 0, 1]),
            ("minimax", &[0, 1]),
            ("haiku", &[5]),
            ("4.5", &[6, 5]),
            ("son", &[6]),
            ("gpt mini", &[2, 3]),
            ("", &[2, 3, 4, 6, 0, 1, 5]),
        ];
        check_table(cases, |query| rank_usable_first(query, MODELS));
        // Without the usable-first rule `mini` lists `minimax` first: the case above is the fix.
        assert_eq!(rank("mini", MODELS.map(|(text, _)| text))[0], 0);
    }
}
