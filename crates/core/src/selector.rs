//! Node selector terms (`nodeAffinity`) and label selectors (pod affinity,
//! topology spread, namespace selectors), parsed once and matched against
//! labels (and a node's name).

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::ModelError;
use crate::node::Labels;

/// A selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The value is one of the listed values.
    In,
    /// The label is absent, or its value is none of the listed values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The value, read as an integer, is greater than the single listed one.
    Gt,
    /// The value, read as an integer, is less than the single listed one.
    Lt,
}

/// One parsed requirement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// Label key (or field name for `matchFields`).
    pub key: String,
    /// Operator.
    pub op: Operator,
    /// Values for `In`/`NotIn`.
    pub values: Vec<String>,
    /// The bound for `Gt`/`Lt`.
    pub bound: i64,
}

impl Requirement {
    fn parse(r: &NodeSelectorRequirement, object: &str, field: &str) -> Result<Self, ModelError> {
        let op = match r.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            other => {
                return Err(ModelError::new(
                    object,
                    format!("{field}.operator"),
                    format!("unknown operator {other:?}"),
                ));
            }
        };
        let values = r.values.clone().unwrap_or_default();
        let mut bound = 0;
        match op {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(ModelError::new(
                    object,
                    format!("{field}.values"),
                    "must be non-empty for In and NotIn",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(ModelError::new(
                    object,
                    format!("{field}.values"),
                    "must be empty for Exists and DoesNotExist",
                ));
            }
            Operator::Gt | Operator::Lt => {
                bound = match values.as_slice() {
                    [v] => v.parse().map_err(|_| {
                        ModelError::new(object, format!("{field}.values"), format!("{v:?} is not an integer"))
                    })?,
                    _ => {
                        return Err(ModelError::new(
                            object,
                            format!("{field}.values"),
                            "must have exactly one value for Gt and Lt",
                        ));
                    }
                };
            }
            _ => {}
        }
        Ok(Requirement {
            key: r.key.clone(),
            op,
            values,
            bound,
        })
    }

    /// Whether a label (or field) value satisfies the requirement.
    #[inline]
    pub fn matches(&self, value: Option<&str>) -> bool {
        match (self.op, value) {
            (Operator::In, Some(v)) => self.values.iter().any(|x| x == v),
            (Operator::In, None) => false,
            (Operator::NotIn, Some(v)) => !self.values.iter().any(|x| x == v),
            (Operator::NotIn, None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
            (Operator::Gt, Some(v)) => v.parse::<i64>().is_ok_and(|n| n > self.bound),
            (Operator::Lt, Some(v)) => v.parse::<i64>().is_ok_and(|n| n < self.bound),
            (Operator::Gt | Operator::Lt, None) => false,
        }
    }
}

/// A node selector term: all expressions and all fields must match. A term
/// with neither matches nothing, as in Kubernetes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Term {
    /// `matchExpressions` on node labels.
    pub expressions: Vec<Requirement>,
    /// `matchFields`; only `metadata.name` is supported, as in Kubernetes.
    pub fields: Vec<Requirement>,
}

impl Term {
    /// Parses a term; `field` names it in errors.
    pub fn parse(t: &NodeSelectorTerm, object: &str, field: &str) -> Result<Self, ModelError> {
        let expressions = t
            .match_expressions
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| Requirement::parse(r, object, &format!("{field}.matchExpressions[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let fields = t
            .match_fields
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| {
                let f = format!("{field}.matchFields[{i}]");
                if r.key != "metadata.name" {
                    return Err(ModelError::new(
                        object,
                        format!("{f}.key"),
                        format!("unsupported field {:?}: only metadata.name", r.key),
                    ));
                }
                let req = Requirement::parse(r, object, &f)?;
                if !matches!(req.op, Operator::In | Operator::NotIn) || req.values.len() != 1 {
                    return Err(ModelError::new(
                        object,
                        f,
                        "metadata.name supports In and NotIn with exactly one value",
                    ));
                }
                Ok(req)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Term { expressions, fields })
    }

    /// Whether a node with these labels and this name matches.
    pub fn matches(&self, labels: &Labels, node_name: &str) -> bool {
        if self.expressions.is_empty() && self.fields.is_empty() {
            return false;
        }
        self.expressions
            .iter()
            .all(|r| r.matches(labels.get(&r.key).map(String::as_str)))
            && self.fields.iter().all(|r| r.matches(Some(node_name)))
    }
}

/// A `metav1.LabelSelector`, parsed: all requirements must hold. As
/// `LabelSelectorAsSelector` reads it, an absent selector selects nothing
/// and an empty one everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    /// `None`: selects nothing.
    requirements: Option<Vec<Requirement>>,
}

impl LabelSelector {
    /// The selector that selects nothing (an absent one).
    pub fn nothing() -> Self {
        LabelSelector { requirements: None }
    }

    /// The selector that selects everything (an empty one).
    pub fn everything() -> Self {
        LabelSelector {
            requirements: Some(Vec::new()),
        }
    }

    /// Parses an optional selector; `field` names it in errors.
    pub fn parse(s: Option<&meta::LabelSelector>, object: &str, field: &str) -> Result<Self, ModelError> {
        let Some(s) = s else {
            return Ok(Self::nothing());
        };
        let mut reqs = Vec::new();
        for (k, v) in s.match_labels.iter().flatten() {
            reqs.push(Requirement::equals(k, v));
        }
        for (i, e) in s.match_expressions.iter().flatten().enumerate() {
            let f = format!("{field}.matchExpressions[{i}]");
            if !matches!(e.operator.as_str(), "In" | "NotIn" | "Exists" | "DoesNotExist") {
                return Err(ModelError::new(
                    object,
                    format!("{f}.operator"),
                    format!("{:?} is not a valid label selector operator", e.operator),
                ));
            }
            let r = NodeSelectorRequirement {
                key: e.key.clone(),
                operator: e.operator.clone(),
                values: e.values.clone(),
            };
            reqs.push(Requirement::parse(&r, object, &f)?);
        }
        Ok(LabelSelector {
            requirements: Some(reqs),
        })
    }

    /// Adds a requirement (`matchLabelKeys`: `key In (value)`,
    /// `mismatchLabelKeys`: `key NotIn (value)`). Nothing stays nothing.
    pub fn add(&mut self, r: Requirement) {
        if let Some(reqs) = &mut self.requirements
            && !reqs.contains(&r)
        {
            reqs.push(r);
        }
    }

    /// Its requirements (`None`: it selects nothing).
    pub fn requirements(&self) -> Option<&[Requirement]> {
        self.requirements.as_deref()
    }

    /// Whether it selects nothing.
    pub fn is_nothing(&self) -> bool {
        self.requirements.is_none()
    }

    /// Whether it selects everything.
    pub fn is_everything(&self) -> bool {
        self.requirements.as_ref().is_some_and(Vec::is_empty)
    }

    /// Whether labels match.
    #[inline]
    pub fn matches(&self, labels: &Labels) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels.get(&r.key).map(String::as_str))),
        }
    }
}

impl Requirement {
    /// `key In (value)`.
    pub fn equals(key: &str, value: &str) -> Self {
        Requirement {
            key: key.to_owned(),
            op: Operator::In,
            values: vec![value.to_owned()],
            bound: 0,
        }
    }

    /// `key NotIn (value)`.
    pub fn differs(key: &str, value: &str) -> Self {
        Requirement {
            key: key.to_owned(),
            op: Operator::NotIn,
            values: vec![value.to_owned()],
            bound: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn term(v: serde_json::Value) -> Result<Term, ModelError> {
        Term::parse(&serde_json::from_value(v).unwrap(), "Pod p", "t")
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn operators() {
        let l = labels(&[("zone", "a"), ("cores", "16")]);
        let cases = [
            (json!({"key": "zone", "operator": "In", "values": ["a", "b"]}), true),
            (json!({"key": "zone", "operator": "In", "values": ["b"]}), false),
            (json!({"key": "zone", "operator": "NotIn", "values": ["a"]}), false),
            (json!({"key": "missing", "operator": "NotIn", "values": ["a"]}), true),
            (json!({"key": "zone", "operator": "Exists"}), true),
            (json!({"key": "missing", "operator": "DoesNotExist"}), true),
            (json!({"key": "cores", "operator": "Gt", "values": ["8"]}), true),
            (json!({"key": "cores", "operator": "Gt", "values": ["16"]}), false),
            (json!({"key": "cores", "operator": "Lt", "values": ["32"]}), true),
            (json!({"key": "zone", "operator": "Gt", "values": ["1"]}), false),
            (json!({"key": "missing", "operator": "Lt", "values": ["1"]}), false),
        ];
        for (req, want) in cases {
            let t = term(json!({"matchExpressions": [req.clone()]})).unwrap();
            assert_eq!(t.matches(&l, "n1"), want, "{req}");
        }
    }

    #[test]
    fn match_fields_and_empty_term() {
        let t = term(json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})).unwrap();
        assert!(t.matches(&labels(&[]), "n1"));
        assert!(!t.matches(&labels(&[]), "n2"));
        assert!(!term(json!({})).unwrap().matches(&labels(&[("a", "b")]), "n1"));
    }

    #[test]
    fn label_selectors_absent_empty_and_merged() {
        let parse = |v: serde_json::Value| {
            LabelSelector::parse(Some(&serde_json::from_value(v).unwrap()), "Pod p", "s").unwrap()
        };
        let l = labels(&[("app", "web"), ("tier", "front")]);
        assert!(!LabelSelector::parse(None, "Pod p", "s").unwrap().matches(&l));
        assert!(parse(json!({})).matches(&l));
        assert!(parse(json!({"matchLabels": {"app": "web"}})).matches(&l));
        assert!(!parse(json!({"matchLabels": {"app": "db"}})).matches(&l));
        assert!(
            parse(json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["back"]}]})).matches(&l)
        );
        let mut s = parse(json!({"matchLabels": {"app": "web"}}));
        s.add(Requirement::differs("tier", "front"));
        assert!(!s.matches(&l));
        let e = LabelSelector::parse(
            Some(
                &serde_json::from_value(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}))
                    .unwrap(),
            ),
            "Pod p",
            "s",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Pod p: s.matchExpressions[0].operator: \"Gt\" is not a valid label selector operator"
        );
    }

    #[test]
    fn invalid_requirements_name_the_field() {
        let e = term(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Pod p: t.matchExpressions[0].values: \"x\" is not an integer"
        );
        let e = term(json!({"matchExpressions": [{"key": "a", "operator": "Near"}]})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Pod p: t.matchExpressions[0].operator: unknown operator \"Near\""
        );
        let e = term(json!({"matchFields": [{"key": "spec.x", "operator": "In", "values": ["x"]}]})).unwrap_err();
        assert!(e.to_string().contains("matchFields[0].key"));
    }
}
