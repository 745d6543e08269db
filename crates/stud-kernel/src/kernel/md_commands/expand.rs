//! A Markdown command's body with its arguments put in, as Claude Code
//! does: `$ARGUMENTS` is everything after the command, `$1` to `$9` the
//! words (a quoted phrase is one word). A body with no placeholder gets
//! the arguments on a line after it, so none is lost.

/// The prompt `body` makes with `raw` as the arguments.
pub fn expand(body: &str, raw: &str) -> String {
    let raw = raw.trim();
    let words = words(raw);
    let mut out = String::with_capacity(body.len() + raw.len());
    let mut used = false;
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(raw);
            used = true;
            rest = tail;
        } else if let Some(d) = after
            .chars()
            .next()
            .filter(|c| c.is_ascii_digit() && *c != '0')
        {
            let n = d.to_digit(10).unwrap_or(1) as usize;
            out.push_str(words.get(n - 1).map(String::as_str).unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    let out = out.trim_end().to_string();
    if !used && !raw.is_empty() {
        return format!("{out}\n\nArguments: {raw}");
    }
    out
}

/// Words of `raw`; `"a b"` or `'a b'` is one.
fn words(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in raw.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_the_arguments() {
        assert_eq!(
            expand("Fix issue #$ARGUMENTS now", "123 fast"),
            "Fix issue #123 fast now"
        );
        assert_eq!(
            expand(
                "Review PR #$1 with priority $2 and $3.",
                "456 \"very high\""
            ),
            "Review PR #456 with priority very high and ."
        );
        assert_eq!(expand("costs $5", ""), "costs");
        assert_eq!(
            expand("Price in $ only", "x"),
            "Price in $ only\n\nArguments: x"
        );
        assert_eq!(expand("Summarise the repo\n", ""), "Summarise the repo");
    }
}
