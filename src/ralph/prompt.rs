//! What the model reads each iteration of a model-driven loop (Unipi's `buildPrompt`): a heading
//! with the loop's name and iteration, the reflection checkpoint every N iterations, the task
//! file as it is now, and how to go on (`ralph_done`) or finish (`<promise>COMPLETE</promise>`).

use super::state::{COMPLETE_MARKER, TaskLoop};

/// What a reflection turn asks when the loop names no instructions of its own (Unipi's).
const REFLECTION: &str = "REFLECTION CHECKPOINT\n\nPause and reflect on your progress before \
     going on:\n1. What has been accomplished so far?\n2. What is working well?\n3. What is not \
     working or is blocking progress?\n4. Should the approach be adjusted?\n5. What are the next \
     priorities?\n\nUpdate the task file with your reflection, then continue working.";

/// The rule above and below the heading.
fn rule() -> String {
    "─".repeat(71)
}

/// The heading line: `🔄 RALPH LOOP: <name> | Iteration 2/50[ | 🪞 REFLECTION]`.
pub(crate) fn heading(state: &TaskLoop, reflect: bool) -> String {
    format!(
        "🔄 RALPH LOOP: {} | Iteration {}{}",
        state.name,
        state.progress(),
        if reflect { " | 🪞 REFLECTION" } else { "" }
    )
}

/// The message of the loop's current iteration, with the task file's `task` text.
pub(crate) fn prompt(state: &TaskLoop, task: &str, reflect: bool) -> String {
    let mut out = format!("{}\n{}\n{}\n\n", rule(), heading(state, reflect), rule());
    if reflect {
        out.push_str(state.reflect_instructions.as_deref().unwrap_or(REFLECTION));
        out.push_str("\n\n");
    }
    let file = state.task_file.display();
    out.push_str(&format!(
        "## Current Task (from {file})\n\n{}\n\n## Instructions\n\n",
        task.trim_end()
    ));
    let mut steps =
        vec!["The user can press ESC to pause the loop; /unipi:ralph stop ends it.".to_owned()];
    if state.items_per_iteration > 0 {
        steps.push(format!(
            "Process approximately {} items this iteration, then call ralph_done.",
            state.items_per_iteration
        ));
    }
    steps.push(format!("Update {file} with your progress as you work."));
    steps.push(format!(
        "When the whole task is FULLY COMPLETE, answer with {COMPLETE_MARKER} (and do not call \
         ralph_done)."
    ));
    steps.push(
        "Otherwise, once this iteration made real progress, call the ralph_done tool to get \
         the next iteration."
            .to_owned(),
    );
    for (n, step) in steps.iter().enumerate() {
        out.push_str(&format!("{}. {step}\n", n + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ralph::state::Options;

    #[test]
    fn the_prompt_names_the_iteration_the_task_and_how_to_go_on() {
        let options = Options {
            max_iterations: 5,
            items_per_iteration: 3,
            reflect_every: 2,
        };
        let mut state = TaskLoop::new("demo", ".unipi/ralph/demo.md".into(), options, 0);
        let first = prompt(&state, "# Task\n- [ ] one\n", false);
        assert!(
            first.starts_with(&format!(
                "{}\n🔄 RALPH LOOP: demo | Iteration 1/5\n",
                rule()
            )),
            "{first}"
        );
        assert!(first.contains(
            "## Current Task (from .unipi/ralph/demo.md)\n\n# Task\n- [ ] one\n\n## Instructions"
        ));
        assert!(
            first.contains("Process approximately 3 items this iteration, then call ralph_done.")
        );
        assert!(first.contains("answer with <promise>COMPLETE</promise>"));
        assert!(!first.contains("REFLECTION"), "{first}");
        state.iteration = 3;
        let reflecting = prompt(&state, "t", true);
        assert!(
            reflecting.contains("Iteration 3/5 | 🪞 REFLECTION"),
            "{reflecting}"
        );
        assert!(reflecting.contains("REFLECTION CHECKPOINT"), "{reflecting}");
        state.reflect_instructions = Some("Look back.".to_owned());
        state.items_per_iteration = 0;
        state.max_iterations = 0;
        let own = prompt(&state, "t", true);
        assert!(own.contains("Iteration 3 | 🪞 REFLECTION"), "{own}");
        assert!(own.contains("\n\nLook back.\n\n## Current Task"), "{own}");
        assert!(!own.contains("Process approximately"), "{own}");
    }
}
