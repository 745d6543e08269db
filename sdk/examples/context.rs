//! A context provider: tells the model which files and folders are at the
//! top of the project, as a system message on every request.

use stud_sdk::prelude::*;

/// At most this many entries are listed.
const MAX_ENTRIES: usize = 200;

#[derive(Default)]
struct Layout;

/// The fragment's text for these entry names (folders end in `/`).
fn describe(mut names: Vec<String>) -> String {
    names.sort();
    let more = names.len().saturating_sub(MAX_ENTRIES);
    names.truncate(MAX_ENTRIES);
    let mut text = format!("The project's top level: {}", names.join(", "));
    if more > 0 {
        text.push_str(&format!(" (and {more} more)"));
    }
    text
}

impl ContextProvider for Layout {
    fn provide(&mut self, ctx: ComposeContext) -> Result<Vec<Fragment>, Error> {
        let Some(root) = ctx.project_dir else {
            return Ok(Vec::new());
        };
        let entries = std::fs::read_dir(&root)
            .map_err(|e| Error::internal(format!("cannot list {root}: {e}")))?;
        let names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type() {
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    _ => name,
                }
            })
            .filter(|n| !n.starts_with('.'))
            .collect();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Fragment {
            kind: FragmentKind::SystemMessage,
            content: describe(names),
            priority: 10,
            token_budget: 2_000,
        }])
    }
}

stud_sdk::export_context_provider!(Layout);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_entries_sorted() {
        let text = describe(vec!["src/".into(), "Cargo.toml".into()]);
        assert_eq!(text, "The project's top level: Cargo.toml, src/");
    }
}
