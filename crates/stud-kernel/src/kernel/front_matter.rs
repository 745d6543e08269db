//! YAML front matter between two `---` lines at the top of a Markdown
//! file: the shape of agent definitions, Markdown commands and Agent
//! Skills (`SKILL.md`), as other agents write them.

/// The front matter and the body, when the text starts with `---`.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The line of the file a YAML error points at (the front matter starts
/// on the file's second line), when the error says.
pub fn error_line(e: &serde_yaml_ng::Error) -> Option<usize> {
    e.location().map(|l| l.line() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_split_at_the_second_rule() {
        assert_eq!(split("---\na: 1\n---\nbody\n"), Some(("a: 1\n", "body\n")));
        assert_eq!(
            split("\u{feff}---\r\na: 1\r\n---\r\nb"),
            Some(("a: 1\r\n", "b"))
        );
        assert_eq!(split("no front matter"), None);
        assert_eq!(split("---\nnever closed\n"), None);
        let e = serde_yaml_ng::from_str::<serde_yaml_ng::Value>("a: 1\nb: [\n").unwrap_err();
        assert!(error_line(&e).is_some_and(|l| l >= 2), "{e}");
    }
}
