//! Timed steps: `cargo xtask ci` runs each of its steps through [`Steps::run`], which keeps the
//! step's wall time and outcome, and prints the table of every step at the end, failed ones
//! included.

use std::time::{Duration, Instant};

use anyhow::Result;

/// The steps run so far, with their wall time and outcome.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    done: Vec<Step>,
}

#[derive(Debug)]
struct Step {
    name: String,
    took: Duration,
    ok: bool,
}

impl Steps {
    /// Runs `step` under `name` and keeps its time, whatever its outcome.
    pub(crate) fn run<T>(&mut self, name: &str, step: impl FnOnce() -> Result<T>) -> Result<T> {
        let started = Instant::now();
        let result = step();
        self.done.push(Step {
            name: name.to_owned(),
            took: started.elapsed(),
            ok: result.is_ok(),
        });
        result
    }

    /// The table of every step run: name, seconds, outcome, and the total.
    pub(crate) fn table(&self, title: &str) -> String {
        let width = self
            .done
            .iter()
            .map(|s| s.name.len())
            .chain([title.len(), "total".len()])
            .max()
            .unwrap_or(0);
        let mut out = format!("{title:<width$}  {:>8}  outcome\n", "seconds");
        let mut total = Duration::ZERO;
        for step in &self.done {
            total += step.took;
            let outcome = if step.ok { "ok" } else { "FAILED" };
            out.push_str(&format!(
                "{:<width$}  {:>8.1}  {outcome}\n",
                step.name,
                step.took.as_secs_f64()
            ));
        }
        out.push_str(&format!(
            "{:<width$}  {:>8.1}\n",
            "total",
            total.as_secs_f64()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_step_its_time_and_outcome_failed_ones_included() {
        let mut steps = Steps::default();
        steps.run("fmt", || Ok(())).unwrap();
        assert!(
            steps
                .run("clippy", || -> Result<()> { anyhow::bail!("lint") })
                .is_err()
        );
        let table = steps.table("xtask ci step");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].starts_with("xtask ci step"), "{table}");
        assert!(
            lines[1].starts_with("fmt ") && lines[1].ends_with(" ok"),
            "{table}"
        );
        assert!(
            lines[2].starts_with("clippy ") && lines[2].ends_with(" FAILED"),
            "{table}"
        );
        assert!(lines[3].starts_with("total "), "{table}");
    }
}
