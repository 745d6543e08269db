//! Init's default: a stage body with `{{ctx.key}}` and `${ctx.key}`
//! placeholders (dotted paths) filled from the stage context. A missing
//! key renders empty; strings render bare, anything else as JSON.

use serde_json::Value;

pub fn render(body: &str, ctx: &Value) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    loop {
        let next = [("{{", "}}"), ("${", "}")]
            .into_iter()
            .filter_map(|(open, close)| rest.find(open).map(|at| (at, open, close)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, open, close)) = next else {
            out.push_str(rest);
            return out;
        };
        let after = &rest[at + open.len()..];
        let inner = after.find(close).map(|end| (end, after[..end].trim()));
        match inner.and_then(|(end, i)| i.strip_prefix("ctx.").map(|path| (end, path))) {
            Some((end, path)) => {
                out.push_str(&rest[..at]);
                out.push_str(&lookup(ctx, path));
                rest = &after[end + close.len()..];
            }
            // Not a placeholder: keep the opening as text, go on after it.
            None => {
                out.push_str(&rest[..at + open.len()]);
                rest = after;
            }
        }
    }
}

fn lookup(ctx: &Value, path: &str) -> String {
    let mut v = ctx;
    for key in path.split('.') {
        v = match v {
            Value::Object(m) => match m.get(key) {
                Some(x) => x,
                None => return String::new(),
            },
            Value::Array(a) => match key.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(x) => x,
                None => return String::new(),
            },
            _ => return String::new(),
        };
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_placeholder_forms() {
        let ctx = json!({"task": "fix it", "units": ["a", "b"], "n": {"k": 3}});
        assert_eq!(
            render(
                "Do {{ctx.task}} in ${ctx.units.1} ({{ ctx.n.k }}), {{ctx.none}}!",
                &ctx
            ),
            "Do fix it in b (3), !"
        );
        assert_eq!(render("{{ctx.units}}", &ctx), "[\"a\",\"b\"]");
        assert_eq!(render("keep {{ctx.task", &ctx), "keep {{ctx.task");
        assert_eq!(render("{{other}} ${x}", &ctx), "{{other}} ${x}");
    }
}
