//! References written between two markers in text the user gives (`${VAR}` in MCP server
//! configs, `{{id}}` in workflow prompts): one scanner finds them, each caller decides what a
//! reference stands for.

/// `text` with each reference written `open`…`close` replaced by what `resolve` makes of the
/// text between the markers: `Ok(Some(value))` puts `value` in, `Ok(None)` keeps the reference as
/// written, `Err` stops. An `open` with no `close` after it is not a reference and stays as
/// written.
pub fn replace_references<E>(
    text: &str,
    open: &str,
    close: &str,
    mut resolve: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let written = &rest[start..start + open.len() + end + close.len()];
        match resolve(&after[..end])? {
            Some(value) => out.push_str(&value),
            None => out.push_str(written),
        }
        rest = &after[end + close.len()..];
    }
    out.push_str(rest);
    Ok(out)
}
