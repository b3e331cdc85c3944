//! The names MCP tools are bridged under: exactly what Pi 1.x would have used for the same server
//! and tool (`createMcpToolName` in Pi's MCP extension), so prompts, `--tools` filters and habits
//! carry over when the workbench owns MCP. `mcp__<server>__<tool>`, every character other than
//! ASCII letters, digits and `_` replaced by `_` (one per UTF-16 unit, as JavaScript counts them),
//! at most 64 characters; a longer name is cut to 55 and gets `_` and the first 8 hex digits of
//! the SHA-256 of `<server>\0<tool>`, so two long names that share a prefix still differ.
//!
//! `"toolNaming": "unipi"` at the top of an MCP file gives the original Unipi's names instead,
//! `<server>__<tool>` ([`ToolNaming::Unipi`]), with the same character and length rules (Unipi
//! applied none; a provider refuses such a name, so it never worked unsanitised).

use sha2::{Digest, Sha256};

/// The longest tool name model providers accept.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;

/// How bridged MCP tools are named: `"toolNaming"` in an MCP file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolNaming {
    /// `mcp__<server>__<tool>`, as Pi and Claude Code name them.
    #[default]
    Pi,
    /// `<server>__<tool>`, as the original Unipi named them.
    Unipi,
}

impl ToolNaming {
    /// The value of `"toolNaming"`, or `None` for any other.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "pi" => Some(Self::Pi),
            "unipi" => Some(Self::Unipi),
            _ => None,
        }
    }
}

/// The bridged name of `tool` on `server`, Pi's way.
#[cfg(test)]
pub(crate) fn bridged_tool_name(server: &str, tool: &str) -> String {
    named_tool(ToolNaming::Pi, server, tool)
}

/// The bridged name of `tool` on `server` in `naming`.
pub(crate) fn named_tool(naming: ToolNaming, server: &str, tool: &str) -> String {
    let full = match naming {
        ToolNaming::Pi => format!("mcp__{server}__{tool}"),
        ToolNaming::Unipi => format!("{server}__{tool}"),
    };
    let mut name = String::new();
    for c in full.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
        } else {
            // JavaScript's regex replaces each UTF-16 unit of an astral character separately.
            name.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    if name.len() <= MAX_TOOL_NAME_LEN {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    // All ASCII by now, so byte length is character length.
    name.truncate(MAX_TOOL_NAME_LEN - hash.len() - 1);
    format!("{name}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridged_names_table() {
        let long_tool = "a".repeat(70);
        let cases: &[(&str, &str, &str)] = &[
            ("everything", "echo", "mcp__everything__echo"),
            ("my-server", "get.file", "mcp__my_server__get_file"),
            ("fs", "read file/now", "mcp__fs__read_file_now"),
            ("s", "caf\u{e9}", "mcp__s__caf_"),
            ("s", "\u{1f600}x", "mcp__s____x"),
            ("s", "UPPER_lower_09", "mcp__s__UPPER_lower_09"),
            // Exactly 64 characters stays as it is.
            ("s", &"b".repeat(56), &format!("mcp__s__{}", "b".repeat(56))),
        ];
        for (server, tool, expected) in cases {
            assert_eq!(
                bridged_tool_name(server, tool),
                *expected,
                "{server}/{tool}"
            );
        }
        // The expected name printed by Node with Pi's own algorithm.
        let long = bridged_tool_name("s", &long_tool);
        assert_eq!(long.len(), MAX_TOOL_NAME_LEN);
        assert_eq!(long, format!("mcp__s__{}_6388944c", "a".repeat(47)));
        let other = bridged_tool_name("s", &format!("{long_tool}b"));
        assert_ne!(long, other, "long names sharing a prefix must differ");
        assert_eq!(bridged_tool_name("s", &long_tool), long, "deterministic");
    }

    /// The original Unipi's `server__tool`, under the same character and length rules.
    #[test]
    fn unipi_names_table() {
        let cases: &[(&str, &str, &str)] = &[
            ("everything", "echo", "everything__echo"),
            ("my-server", "get.file", "my_server__get_file"),
            ("s", &"b".repeat(61), &format!("s__{}", "b".repeat(61))),
        ];
        for (server, tool, expected) in cases {
            assert_eq!(named_tool(ToolNaming::Unipi, server, tool), *expected);
        }
        let long = named_tool(ToolNaming::Unipi, "s", &"a".repeat(70));
        assert_eq!(long.len(), MAX_TOOL_NAME_LEN);
        assert!(long.starts_with("s__aaa"), "{long}");
        assert_eq!(
            named_tool(ToolNaming::Pi, "everything", "echo"),
            bridged_tool_name("everything", "echo")
        );
        assert_eq!(ToolNaming::parse("unipi"), Some(ToolNaming::Unipi));
        assert_eq!(ToolNaming::parse("pi"), Some(ToolNaming::Pi));
        assert_eq!(ToolNaming::parse("claude"), None);
    }
}
