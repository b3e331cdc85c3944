//! The check every table test of a function makes: each input gives its expected output. Kept
//! once so every such table fails the same way, naming the case that broke.

use std::fmt::Debug;

/// Asserts `f(input) == want` for each `(input, want)` of `cases`, in order; a failure names the
/// input.
#[track_caller]
pub fn check_table<I: Debug, W: Debug, O: PartialEq<W> + Debug>(
    cases: impl IntoIterator<Item = (I, W)>,
    mut f: impl FnMut(&I) -> O,
) {
    for (input, want) in cases {
        assert_eq!(f(&input), want, "{input:?}");
    }
}
