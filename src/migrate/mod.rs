//! `unipi-tui migrate [--apply]`: moves an original Unipi setup (the home directory and the
//! current project) into our files, printing every change — file → file, key → key — and what it
//! leaves alone. A dry run by default; `--apply` writes. The workbench reads every Unipi file
//! this moves where it is anyway ([`crate::config::module_file::ModuleConfig::UNIPI_FILES`],
//! [`crate::mcp::config`]), so migrating is tidying up, never a condition for a setup to work.
//!
//! Rules: a key our file already has is kept (ours wins, and the report says so); our file is
//! merged into, never replaced, and one that is not a JSON object is not touched; every write is
//! crash-safe ([`crate::sys::write_atomic`]) and a file that may hold secrets (`mcp.json`: its
//! servers' `env` and `headers`; `web.json`: the search keys) is made 0600; Unipi's own files are
//! never changed or removed.

mod plan;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use plan::plan;

/// The subcommand's word.
pub const SUBCOMMAND: &str = "migrate";

/// Moves an original Unipi setup (home and the current project) into unipi-tui's files.
#[derive(Debug, Parser)]
#[command(name = "unipi-tui migrate")]
pub(crate) struct MigrateArgs {
    /// Write the changes (without it: print them and write nothing).
    #[arg(long)]
    apply: bool,
}

/// `unipi-tui migrate …` (`args` after the program name, `migrate` first).
pub fn main(args: &[OsString]) -> ExitCode {
    let args = match MigrateArgs::try_parse_from(args) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    let home = dirs::home_dir();
    let workspace = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("unipi-tui migrate: the current directory cannot be read: {err}");
            return ExitCode::FAILURE;
        }
    };
    let (text, ok) = run(home.as_deref(), &workspace, args.apply);
    print!("{text}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The report of a migration of `home` and `workspace`, written when `apply`, and whether
/// everything could be read (and written).
pub fn run(home: Option<&Path>, workspace: &Path, apply: bool) -> (String, bool) {
    let pi_settings = crate::config::pi_settings_file(home);
    let plan = plan(home, workspace, pi_settings.as_deref());
    let mut text = plan.render(home, apply);
    let mut ok = plan.problems.is_empty();
    if apply {
        for (file, result) in plan.apply() {
            let shown = plan::show(home, &file);
            match result {
                Ok(()) => text.push_str(&format!("wrote {shown}\n")),
                Err(err) => {
                    ok = false;
                    text.push_str(&format!("could not write {shown}: {err:#}\n"));
                }
            }
        }
    }
    (text, ok)
}
