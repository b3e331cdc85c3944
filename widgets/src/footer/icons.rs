//! The segments' icons in each [`IconStyle`] (Unipi's icon sets: Nerd Font code points, emoji,
//! short text labels), plus the workbench's own Unicode set, which keeps a symbol only where the
//! segment's text does not already say what it is.

use super::settings::IconStyle;

/// What a segment's icon stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Icon {
    Model,
    ApiState,
    ToolCount,
    Git,
    Context,
    Cost,
    Tokens,
    TokensIn,
    TokensOut,
    Session,
    Hostname,
    Clock,
    Tps,
    Duration,
    ThinkingLevel,
    /// A workflow step's command.
    Command,
    SandboxLevel,
    CommandDuration,
    /// The board's documents and tasks.
    Board,
    Loop,
    Notify,
    LastSent,
    Tasks,
    Servers,
}

impl Icon {
    /// The icon in `style`; empty when the style draws none for it.
    pub fn glyph(self, style: IconStyle) -> &'static str {
        let (nerd, emoji, text, unicode) = self.set();
        match style {
            IconStyle::Nerd => nerd,
            IconStyle::Emoji => emoji,
            IconStyle::Text => text,
            IconStyle::Unicode => unicode,
        }
    }

    /// (nerd, emoji, text, unicode).
    fn set(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Icon::Model => ("\u{f065b}", "🤖", "MDL", ""),
            Icon::ApiState => ("\u{f725}", "🔄", "API", ""),
            Icon::ToolCount => ("\u{f0ad}", "🔧", "TLS", ""),
            Icon::Git => ("\u{f0e8}", "🔀", "GIT", "⎇"),
            Icon::Context => ("\u{f8d8}", "🗄️", "CTX", ""),
            Icon::Cost => ("\u{f155}", "💲", "CST", ""),
            Icon::Tokens => ("\u{f07b}", "📊", "TOK", ""),
            Icon::TokensIn => ("\u{f07b}", "⬆️", "TKI", ""),
            Icon::TokensOut => ("\u{f07b}", "⬇️", "TKO", ""),
            Icon::Session => ("\u{f550}", "📋", "SES", ""),
            Icon::Hostname => ("\u{f109}", "🏠", "HST", ""),
            Icon::Clock => ("\u{f017}", "🕔", "CLK", ""),
            Icon::Tps => ("\u{f062}", "⚡", "TPS", ""),
            Icon::Duration => ("\u{f49b}", "⏱", "DUR", "⧗"),
            Icon::ThinkingLevel => ("\u{f4d8}", "💡", "THK", ""),
            Icon::Command => ("\u{f0e8}", "▶️", "CMD", "▶"),
            Icon::SandboxLevel => ("\u{f023}", "🔒", "SBX", ""),
            Icon::CommandDuration => ("\u{f49b}", "⏱", "DUR", ""),
            Icon::Board => ("\u{f0619}", "📑", "KB", ""),
            Icon::Loop => ("\u{f0709}", "🔁", "RL", "↻"),
            Icon::Notify => ("\u{f0e0}", "🔔", "NTF", ""),
            Icon::LastSent => ("\u{f017}", "⏱", "LST", ""),
            Icon::Tasks => ("\u{f0ae}", "📋", "BG", ""),
            Icon::Servers => ("\u{f0f6}", "🖥️", "SRV", ""),
        }
    }
}
