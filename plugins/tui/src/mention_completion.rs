//! Tab after `@`: the host lists project paths (`.gitignore` respected,
//! never outside the project) and the word is completed as a shell
//! completes: one match is taken whole, several are cut to what they
//! share and listed under the input.

use stud_sdk::host::terminal::complete_path;
use tui_textarea::TextArea;

/// The most matches asked for; the list under the input shows fewer.
const ASKED: u32 = 50;

/// The `@word` ending at the cursor, without the `@`.
fn mention_at_cursor(input: &TextArea<'_>) -> Option<String> {
    let (row, col) = input.cursor();
    let line = input.lines().get(row)?;
    let before: String = line.chars().take(col).collect();
    let word = before.rsplit(char::is_whitespace).next()?;
    word.strip_prefix('@').map(str::to_string)
}

/// Complete the mention at the cursor. `None` when the cursor is not on
/// one (Tab then completes commands); else the matches to list (empty
/// when one was taken or none exist).
pub fn complete(input: &mut TextArea<'static>) -> Option<Vec<String>> {
    let prefix = mention_at_cursor(input)?;
    let found = complete_path(&prefix, ASKED);
    let Some(first) = found.first() else {
        return Some(Vec::new());
    };
    let shared = found
        .iter()
        .fold(first.clone(), |acc, n| common_prefix(&acc, n));
    let (with, listed) = match found.len() {
        1 if first.ends_with('/') => (first.clone(), Vec::new()),
        1 => (format!("{first} "), Vec::new()),
        // A search anywhere can share less than what was typed.
        _ if shared.len() > prefix.len() => (shared, found),
        _ => (prefix.clone(), found),
    };
    for _ in 0..prefix.chars().count() {
        input.delete_char();
    }
    input.insert_str(&with);
    Some(listed)
}

fn common_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_the_cursor_is_the_mention() {
        let mut t = TextArea::from(vec!["look at @src/ma".to_string()]);
        t.move_cursor(tui_textarea::CursorMove::End);
        assert_eq!(mention_at_cursor(&t).as_deref(), Some("src/ma"));
        let mut t = TextArea::from(vec!["mail me@".to_string()]);
        t.move_cursor(tui_textarea::CursorMove::End);
        assert_eq!(mention_at_cursor(&t), None);
        assert_eq!(common_prefix("src/main.rs", "src/map.rs"), "src/ma");
    }
}
