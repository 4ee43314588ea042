//! Label and field selectors, as `?labelSelector=` and `?fieldSelector=`
//! carry them.

use serde_json::Value;

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl LabelSelector {
    /// Parses `app=web,tier!=db,env in (a,b),!legacy,gpu`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_label_req(part).ok_or_else(|| format!("unable to parse requirement: {part:?}"))?);
        }
        Ok(Self(reqs))
    }

    /// Whether `labels` (an object of strings, or null) satisfies it.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }

    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_label_req(p: &str) -> Option<LabelReq> {
    if let Some(k) = p.strip_prefix('!') {
        let k = k.trim();
        return valid_key(k).then(|| LabelReq::NotExists(k.to_owned()));
    }
    for (op, neg) in [(" notin ", true), (" in ", false)] {
        if let Some(i) = p.find(op) {
            let key = p[..i].trim();
            let rest = p[i + op.len()..].trim();
            let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
            let vals: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
            if !valid_key(key) {
                return None;
            }
            return Some(if neg {
                LabelReq::NotIn(key.to_owned(), vals)
            } else {
                LabelReq::In(key.to_owned(), vals)
            });
        }
    }
    if let Some((k, v)) = p.split_once("!=") {
        return valid_key(k.trim()).then(|| LabelReq::NotEq(k.trim().to_owned(), v.trim().to_owned()));
    }
    if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
        return valid_key(k.trim()).then(|| LabelReq::Eq(k.trim().to_owned(), v.trim().to_owned()));
    }
    valid_key(p).then(|| LabelReq::Exists(p.to_owned()))
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`,
/// joined by commas. Unknown fields are rejected with kube's message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(FieldPath, bool, String)>);

/// The fields the double filters on (kube-apiserver's per-kind field label
/// conversions for the fields a scheduler uses).
#[derive(Debug, Clone, Copy, PartialEq)]
enum FieldPath {
    Name,
    Namespace,
    NodeName,
    SchedulerName,
    Phase,
}

impl FieldSelector {
    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses `spec.nodeName=,status.phase!=Succeeded`.
    pub fn parse(s: &str, kind: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, neg, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, false, v)
            } else {
                return Err(format!("invalid selector: '{part}'; can't understand '{part}'"));
            };
            let path = match (field.trim(), kind) {
                ("metadata.name", _) => FieldPath::Name,
                ("metadata.namespace", _) => FieldPath::Namespace,
                ("spec.nodeName", "Pod") => FieldPath::NodeName,
                ("spec.schedulerName", "Pod") => FieldPath::SchedulerName,
                ("status.phase", "Pod") => FieldPath::Phase,
                (f, k) => return Err(format!("field label not supported: {f} (kind {k})")),
            };
            reqs.push((path, neg, value.trim().to_owned()));
        }
        Ok(Self(reqs))
    }

    /// Whether `obj` satisfies it. An absent field compares as `""`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, neg, want)| {
            let ptr = match path {
                FieldPath::Name => "/metadata/name",
                FieldPath::Namespace => "/metadata/namespace",
                FieldPath::NodeName => "/spec/nodeName",
                FieldPath::SchedulerName => "/spec/schedulerName",
                FieldPath::Phase => "/status/phase",
            };
            let have = obj.pointer(ptr).and_then(Value::as_str).unwrap_or("");
            (have == want) != *neg
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let labels = json!({"app": "web", "tier": "front", "env": "prod"});
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app!=db", true),
            ("env in (prod, staging)", true),
            ("env notin (prod)", false),
            ("missing notin (x)", true),
            ("missing in (x)", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app=web,env in (dev,prod),!legacy", true),
        ];
        for (sel, want) in cases {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(Some(&labels)), want, "{sel}");
        }
        assert!(LabelSelector::parse("app=web").is_ok_and(|s| !s.matches(None)));
        assert!(LabelSelector::parse("a b").is_err());
        assert!(LabelSelector::parse("env in prod").is_err());
    }

    #[test]
    fn field_selectors() {
        let bound = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "schedulerName": "s"}, "status": {"phase": "Running"}});
        let pending = json!({"metadata": {"name": "q", "namespace": "ns"}, "spec": {"schedulerName": "s"}});
        let unbound = FieldSelector::parse("spec.nodeName=", "Pod").unwrap();
        assert!(!unbound.matches(&bound) && unbound.matches(&pending));
        let sel = FieldSelector::parse(
            "spec.schedulerName=s,status.phase!=Succeeded,metadata.namespace==ns",
            "Pod",
        )
        .unwrap();
        assert!(sel.matches(&bound) && sel.matches(&pending));
        assert!(FieldSelector::parse("metadata.name=p", "Node").unwrap().matches(&bound));
        let err = FieldSelector::parse("spec.nodeName=x", "Node").unwrap_err();
        assert_eq!(err, "field label not supported: spec.nodeName (kind Node)");
    }
}
