//! What the user chose about the footer, in the shape the segment builder needs: a preset, Unipi's
//! per-group and per-segment toggles, and the context thresholds. The app's config loader
//! (`src/config/footer.rs`) reads `footer.json` into this; the widget only reads it. A preset is
//! a level, not a list of ids: each segment names the leanest preset that shows it, so a module
//! adding segments later needs no edit here.

use std::collections::BTreeMap;

use super::segment::{Role, Segment};

/// How much the footer shows. Ordered: every segment a leaner preset shows, a richer one shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Preset {
    /// Pi's state, the model, the context, the git branch, and the workbench's own markers.
    Minimal,
    /// Adds the working directory, session name, thinking level, tokens, cost, module segments.
    #[default]
    Default,
    /// Everything, including the host name and the segments modules mark as extra detail.
    Full,
}

impl Preset {
    /// Every preset, leanest first.
    pub const ALL: [Preset; 3] = [Preset::Minimal, Preset::Default, Preset::Full];

    /// The name used in `footer.json`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Minimal => "minimal",
            Preset::Default => "default",
            Preset::Full => "full",
        }
    }

    /// The preset called `name` in `footer.json`.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|preset| preset.name() == name)
    }
}

/// Context-window use (in percent) at which the context segment turns to the warning and then
/// the error style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextThresholds {
    pub warning: u8,
    pub error: u8,
}

impl Default for ContextThresholds {
    fn default() -> Self {
        ContextThresholds {
            warning: 60,
            error: 85,
        }
    }
}

impl ContextThresholds {
    /// The role for a context use of `percent` (already rounded the way it is shown).
    pub fn role(self, percent: u64) -> Role {
        if percent >= u64::from(self.error) {
            Role::Error
        } else if percent >= u64::from(self.warning) {
            Role::Warning
        } else {
            Role::Text
        }
    }
}

/// Unipi's `groups.{id}`: whether the group shows at all, and per-segment overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupToggles {
    /// `Some(false)` hides every segment of the group; unset means shown.
    pub show: Option<bool>,
    /// Segment id → shown. Overrides the preset both ways.
    pub segments: BTreeMap<String, bool>,
}

/// The footer settings the segment builder and module segments are filtered by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterSettings {
    pub preset: Preset,
    /// By group id: `core` for the workbench's segments, else the module's name.
    pub groups: BTreeMap<String, GroupToggles>,
    pub context: ContextThresholds,
}

impl Default for FooterSettings {
    /// The default preset; the `notify` group hidden, as in Unipi.
    fn default() -> Self {
        let notify = GroupToggles {
            show: Some(false),
            segments: BTreeMap::new(),
        };
        FooterSettings {
            preset: Preset::Default,
            groups: BTreeMap::from([("notify".to_owned(), notify)]),
            context: ContextThresholds::default(),
        }
    }
}

impl FooterSettings {
    /// Whether `segment` is shown: see [`FooterSettings::shows_id`].
    pub fn shows(&self, segment: &Segment) -> bool {
        self.shows_id(&segment.group, &segment.id, segment.min_preset)
    }

    /// Whether the segment `id` of `group`, which presets from `min_preset` up show, is shown.
    /// A hidden group hides all its segments (Unipi's `show`); otherwise an explicit toggle wins,
    /// and without one the preset decides. Unlike Unipi, a toggle may also add a segment the
    /// preset leaves out, so "minimal plus cost" needs no custom preset.
    pub fn shows_id(&self, group: &str, id: &str, min_preset: Preset) -> bool {
        let toggles = self.groups.get(group);
        if toggles.and_then(|t| t.show) == Some(false) {
            return false;
        }
        match toggles.and_then(|t| t.segments.get(id)) {
            Some(&shown) => shown,
            None => self.preset >= min_preset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's toggles as written in a test: (group, show, [(segment, shown)]).
    type GroupSpec<'a> = (&'a str, Option<bool>, &'a [(&'a str, bool)]);

    fn settings_with(preset: Preset, groups: &[GroupSpec]) -> FooterSettings {
        let groups = groups
            .iter()
            .map(|(group, show, segments)| {
                let segments = segments
                    .iter()
                    .map(|(id, shown)| ((*id).to_owned(), *shown))
                    .collect();
                (
                    (*group).to_owned(),
                    GroupToggles {
                        show: *show,
                        segments,
                    },
                )
            })
            .collect();
        FooterSettings {
            preset,
            groups,
            ..FooterSettings::default()
        }
    }

    #[test]
    fn shows_id_table() {
        use Preset::{Default as Dflt, Full, Minimal};
        let plain = settings_with(Dflt, &[]);
        let minimal = settings_with(Minimal, &[]);
        let toggled = settings_with(
            Minimal,
            &[
                ("core", None, &[("cost", true), ("model", false)]),
                ("mcp", Some(false), &[("servers_active", true)]),
                ("tasks", Some(true), &[]),
            ],
        );
        let cases = [
            (&plain, "core", "cwd", Dflt, true),
            (&plain, "core", "hostname", Full, false),
            (&plain, "core", "model", Minimal, true),
            (&minimal, "core", "cwd", Dflt, false),
            (&minimal, "core", "model", Minimal, true),
            // A toggle adds a segment the preset leaves out, and removes one it has.
            (&toggled, "core", "cost", Dflt, true),
            (&toggled, "core", "model", Minimal, false),
            // A hidden group wins over its segment toggles.
            (&toggled, "mcp", "servers_active", Minimal, false),
            (&toggled, "tasks", "running", Minimal, true),
            (&toggled, "tasks", "queued", Dflt, false),
        ];
        for (settings, group, id, min_preset, want) in cases {
            assert_eq!(
                settings.shows_id(group, id, min_preset),
                want,
                "{group}.{id} from {min_preset:?} in {:?}",
                settings.preset
            );
        }
    }

    #[test]
    fn notify_is_hidden_by_default() {
        let settings = FooterSettings::default();
        assert!(!settings.shows_id("notify", "last_sent", Preset::Minimal));
        assert!(settings.shows_id("helpers", "running", Preset::Default));
    }

    #[test]
    fn context_role_table() {
        let thresholds = ContextThresholds::default();
        let cases = [
            (0, Role::Text),
            (59, Role::Text),
            (60, Role::Warning),
            (84, Role::Warning),
            (85, Role::Error),
            (140, Role::Error),
        ];
        for (percent, want) in cases {
            assert_eq!(thresholds.role(percent), want, "{percent}%");
        }
    }

    #[test]
    fn preset_names_round_trip() {
        for preset in Preset::ALL {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
        }
        assert_eq!(Preset::from_name("nerd"), None);
    }
}
