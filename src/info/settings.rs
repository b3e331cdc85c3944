//! `~/.unipi/config/info.json` (over it, the workspace's): which groups the dashboard shows and
//! in what order, and whether it opens when Pi starts.
//!
//! ```json
//! { "showOnBoot": false, "groupOrder": ["usage", "mcp"], "hidden": ["skills"] }
//! ```
//!
//! Groups missing from `groupOrder` come after the listed ones, in their own order. The
//! original Unipi opened the dashboard at start unless told not to; here it is off unless
//! asked for, since an overlay that takes the keys at start surprises a user who did not.
//! `/unipi:info-settings` edits the home file (crash-safe, other keys kept).

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};
use unipi_widgets::settings::{SettingField, SettingValue};

use crate::config::module_file::{ModuleConfig, Object, read_json_object};

/// The dashboard's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct InfoConfig {
    pub show_on_boot: bool,
    pub group_order: Vec<String>,
    pub hidden: Vec<String>,
}

impl ModuleConfig for InfoConfig {
    const FILE: &'static str = ".unipi/config/info.json";

    fn read(&mut self, file: &mut Object<'_>) {
        file.flag("showOnBoot", &mut self.show_on_boot);
        file.set(
            "groupOrder",
            "a list of group ids",
            &mut self.group_order,
            names,
        );
        file.set("hidden", "a list of group ids", &mut self.hidden, names);
        file.warn_unknown();
    }
}

/// A JSON list of strings.
fn names(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|name| name.as_str().map(str::to_owned))
        .collect()
}

impl InfoConfig {
    /// `ids` (every group there is, in their own order) in the order the settings give, the
    /// hidden ones left out.
    pub(crate) fn arrange<'a>(&self, ids: &[&'a str]) -> Vec<&'a str> {
        let rank = |id: &str| {
            self.group_order
                .iter()
                .position(|listed| listed == id)
                .unwrap_or(usize::MAX)
        };
        let mut shown: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !self.hidden.iter().any(|hidden| hidden == id))
            .collect();
        // Stable: the unlisted keep their own order, after the listed.
        shown.sort_by_key(|id| rank(id));
        shown
    }
}

/// The name the settings overlay gives a hidden group's position.
pub(crate) const HIDDEN: &str = "hidden";
/// The key of the overlay's first field.
const SHOW_ON_BOOT: &str = "showOnBoot";

/// The settings overlay's fields: "open at start", then one per group, in the order shown,
/// whose value is its place (1, 2, …) or `hidden`. `groups` are every group's (id, title).
pub(crate) fn fields(config: &InfoConfig, groups: &[(String, String)]) -> Vec<SettingField> {
    let ids: Vec<&str> = groups.iter().map(|(id, _)| id.as_str()).collect();
    let shown = config.arrange(&ids);
    let mut options: Vec<String> = (1..=groups.len()).map(|n| n.to_string()).collect();
    options.push(HIDDEN.to_owned());
    let mut fields = vec![SettingField {
        key: SHOW_ON_BOOT.to_owned(),
        label: "Open at start".to_owned(),
        value: SettingValue::Bool(config.show_on_boot),
        help: "Opens /unipi:info when Pi starts.".to_owned(),
    }];
    let hidden = ids.iter().filter(|id| !shown.contains(id));
    for id in shown.iter().chain(hidden) {
        let title = groups
            .iter()
            .find(|(group, _)| group == id)
            .map_or(*id, |(_, title)| title.as_str());
        let place = shown
            .iter()
            .position(|shown| shown == id)
            .map_or(HIDDEN.to_owned(), |place| (place + 1).to_string());
        fields.push(SettingField {
            key: (*id).to_owned(),
            label: title.to_owned(),
            value: SettingValue::Choice {
                value: place,
                options: options.clone(),
            },
            help: "Its tab's place; hidden leaves it out. Equal places keep this order.".to_owned(),
        });
    }
    fields
}

/// The file's keys for the overlay's `fields`: `showOnBoot`, `groupOrder` (by place, ties in
/// the overlay's order) and `hidden`.
pub(crate) fn to_values(fields: &[SettingField]) -> Value {
    let mut show_on_boot = false;
    let mut placed: Vec<(usize, &str)> = Vec::new();
    let mut hidden = Vec::new();
    for field in fields {
        match &field.value {
            SettingValue::Bool(on) if field.key == SHOW_ON_BOOT => show_on_boot = *on,
            SettingValue::Choice { value, .. } => match value.parse::<usize>() {
                Ok(place) => placed.push((place, &field.key)),
                Err(_) => hidden.push(field.key.clone()),
            },
            _ => {}
        }
    }
    placed.sort_by_key(|(place, _)| *place);
    let order: Vec<&str> = placed.into_iter().map(|(_, id)| id).collect();
    json!({ "showOnBoot": show_on_boot, "groupOrder": order, "hidden": hidden })
}

/// Writes `values` into the home file, keeping its other keys (blocking; crash-safe).
pub(crate) fn save(home: &Path, values: &Value) -> anyhow::Result<String> {
    let path = home.join(InfoConfig::FILE);
    let mut object = read_json_object(&path)?;
    if let Value::Object(values) = values {
        object.extend(values.clone());
    }
    let dir = path.parent().context("the config file has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut text = serde_json::to_string_pretty(&Value::Object(object))?;
    text.push('\n');
    crate::sys::fs::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(format!("Saved {}.", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::module_file::home_and_workspace;

    fn groups() -> Vec<(String, String)> {
        ["usage", "mcp", "workbench", "skills"]
            .iter()
            .map(|id| ((*id).to_owned(), id.to_uppercase()))
            .collect()
    }

    #[test]
    fn the_order_and_the_hidden_groups_come_from_the_files() {
        let (home, workspace) = home_and_workspace(
            InfoConfig::FILE,
            r#"{"showOnBoot": true, "groupOrder": ["skills", "nosuch", "mcp"], "hidden": ["usage"]}"#,
            r#"{"hidden": ["workbench"], "colour": 1}"#,
        );
        let (config, errors) = InfoConfig::load(Some(home.path()), workspace.path());
        assert!(config.show_on_boot);
        // The workspace's list replaces the home's.
        assert_eq!(config.hidden, ["workbench"]);
        assert_eq!(
            config.arrange(&["usage", "mcp", "workbench", "skills"]),
            ["skills", "mcp", "usage"]
        );
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("colour"), "{errors:?}");

        let (_, errors) = {
            let (home, workspace) =
                home_and_workspace(InfoConfig::FILE, r#"{"groupOrder": "usage"}"#, "{}");
            InfoConfig::load(Some(home.path()), workspace.path())
        };
        let error = errors[0].to_string();
        assert!(
            error.contains("info.json") && error.contains("a list of group ids"),
            "{error}"
        );
    }

    #[test]
    fn the_overlay_fields_round_trip_to_the_file_and_the_save_keeps_other_keys() {
        let config = InfoConfig {
            show_on_boot: false,
            group_order: vec!["mcp".to_owned()],
            hidden: vec!["skills".to_owned()],
        };
        let mut fields = fields(&config, &groups());
        let shown: Vec<(&str, String)> = fields
            .iter()
            .skip(1)
            .map(|field| match &field.value {
                SettingValue::Choice { value, .. } => (field.label.as_str(), value.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        let want = [
            ("MCP", "1"),
            ("USAGE", "2"),
            ("WORKBENCH", "3"),
            ("SKILLS", "hidden"),
        ];
        assert_eq!(shown, want.map(|(label, place)| (label, place.to_owned())));
        // Usage to the front, MCP hidden, open at start.
        fields[0].value = SettingValue::Bool(true);
        for field in &mut fields {
            if let SettingValue::Choice { value, .. } = &mut field.value {
                match field.key.as_str() {
                    "usage" => *value = "1".to_owned(),
                    "mcp" => *value = HIDDEN.to_owned(),
                    "skills" => *value = "2".to_owned(),
                    _ => {}
                }
            }
        }
        let values = to_values(&fields);
        assert_eq!(
            values,
            json!({"showOnBoot": true, "groupOrder": ["usage", "skills", "workbench"], "hidden": ["mcp"]})
        );

        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(InfoConfig::FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"note": "mine", "showOnBoot": false}"#).unwrap();
        let told = save(home.path(), &values).unwrap();
        assert!(told.contains("info.json"), "{told}");
        let (config, errors) = InfoConfig::load(Some(home.path()), home.path());
        assert!(config.show_on_boot);
        assert_eq!(
            config.arrange(&["mcp", "workbench", "usage", "skills"]),
            ["usage", "skills", "workbench"]
        );
        assert_eq!(
            errors.len(),
            1,
            "the user's own key is kept (and still unknown)"
        );
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written["note"], "mine");

        // A file that is not JSON is not overwritten.
        std::fs::write(&path, "{ broken").unwrap();
        let err = save(home.path(), &values).unwrap_err();
        assert!(format!("{err:#}").contains("not overwriting"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
    }

    /// Saves nowhere (the overlay is only drawn).
    struct NoSave;

    impl crate::views::settings::SettingsStore for NoSave {
        fn save(&self, _values: Value) {}

        fn take_outcome(&self) -> Option<Result<String, crate::bridge::Refusal>> {
            None
        }
    }

    /// `/unipi:info-settings` as it opens, at 80x24 and 120x40.
    #[test]
    fn the_settings_overlay_at_80x24_and_120x40() {
        use crate::views::View;
        use ratatui::buffer::Buffer;
        use ratatui::layout::Rect;

        let config = InfoConfig {
            show_on_boot: true,
            group_order: vec!["mcp".to_owned()],
            hidden: vec!["skills".to_owned()],
        };
        let view = crate::views::settings::SettingsView::new(
            "Info dashboard settings",
            fields(&config, &groups()),
            to_values,
            std::sync::Arc::new(NoSave),
        );
        for (width, height) in [(80u16, 24u16), (120, 40)] {
            let area = Rect::new(0, 0, width, height);
            let mut buf = Buffer::empty(area);
            view.render(area, &mut buf, &unipi_widgets::Theme::plain());
            let text: Vec<String> = (0..height)
                .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
                .collect();
            crate::assert_ui_snapshot!(format!("info_settings_{width}x{height}"), text.join("\n"));
        }
    }
}
