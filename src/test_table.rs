//! The checks every table test of a function makes: each input gives its expected output, or
//! each bad input an error that says what is wrong. Kept once so every such table fails the same
//! way, naming the case that broke.

use std::fmt::{Debug, Display};

/// Asserts `f(input) == want` for each `(input, want)` of `cases`, in order; a failure names the
/// input.
#[track_caller]
pub(crate) fn check_table<I: Debug, W: Debug, O: PartialEq<W> + Debug>(
    cases: impl IntoIterator<Item = (I, W)>,
    mut f: impl FnMut(&I) -> O,
) {
    for (input, want) in cases {
        assert_eq!(f(&input), want, "{input:?}");
    }
}

/// Asserts that `f(input)` fails, with an error containing `want`, for each `(input, want)` of
/// `cases`, in order; a failure names the input and shows the error.
#[track_caller]
pub(crate) fn check_errors<I: Debug, T: Debug, E: Display>(
    cases: impl IntoIterator<Item = (I, &'static str)>,
    mut f: impl FnMut(&I) -> Result<T, E>,
) {
    for (input, want) in cases {
        let err = f(&input).unwrap_err().to_string();
        assert!(err.contains(want), "{input:?}: {err}");
    }
}
