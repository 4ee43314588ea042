//! Metric snapshots for offline runs (`simulate --metrics`, `plugin test
//! --metrics`): values per node and source, as JSON or as Prometheus'
//! text exposition format.
//!
//! JSON:
//!
//! ```json
//! {"sources": {"latency": {"node-a": 0.012,
//!                          "node-b": {"value": 0.015, "timestampMs": 1732500000000,
//!                                     "podsSince": 3, "cpuSince": 750, "memorySince": 805306368}}}}
//! ```
//!
//! A value is a number or an object; `timestampMs` defaults to the time the
//! file is read, the `...Since` fields (placements the value does not show
//! yet, beyond those the run makes) to 0.
//!
//! Text: one sample per line, the metric name being the source's name and
//! the `node` label (else `instance`) the node; an optional timestamp in
//! milliseconds ends the line (`latency{node="node-a"} 0.012`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Placed, Series};

/// The series of every source of a snapshot, by source name.
pub type Sources = BTreeMap<String, Vec<Series>>;

/// Parses a snapshot, JSON or text (told apart by the first character).
/// `now_ms` stamps values without a timestamp. Errors name the line or the
/// field.
pub fn parse(text: &str, now_ms: i64) -> Result<Sources, String> {
    if text.trim_start().starts_with('{') {
        parse_json(text, now_ms)
    } else {
        parse_text(text, now_ms)
    }
}

fn parse_json(text: &str, now_ms: i64) -> Result<Sources, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let top = v.as_object().ok_or("must be an object with \"sources\"")?;
    if let Some(k) = top.keys().find(|k| *k != "sources") {
        return Err(format!("unknown field {k:?} (expected \"sources\")"));
    }
    let sources = top
        .get("sources")
        .and_then(Value::as_object)
        .ok_or("sources: must be an object of sources")?;
    let mut out = Sources::new();
    for (name, nodes) in sources {
        let at = format!("sources.{name}");
        let nodes = nodes
            .as_object()
            .ok_or_else(|| format!("{at}: must be an object of node to value"))?;
        let mut series = Vec::with_capacity(nodes.len());
        for (node, v) in nodes {
            let at = format!("{at}.{node}");
            let number = |v: &Value, field: &str| {
                v.as_f64()
                    .ok_or_else(|| format!("{at}{field}: must be a number, not {v}"))
            };
            let int = |o: &serde_json::Map<String, Value>, field: &str| match o.get(field) {
                None => Ok(0),
                Some(v) => v
                    .as_i64()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| format!("{at}.{field}: must be a whole number >= 0, not {v}")),
            };
            series.push(match v {
                Value::Object(o) => {
                    if let Some(k) = o.keys().find(|k| {
                        !["value", "timestampMs", "podsSince", "cpuSince", "memorySince"].contains(&k.as_str())
                    }) {
                        return Err(format!(
                            "{at}: unknown field {k:?} (expected value, timestampMs, podsSince, cpuSince, memorySince)"
                        ));
                    }
                    let value = number(
                        o.get("value").ok_or_else(|| format!("{at}.value: is required"))?,
                        ".value",
                    )?;
                    let at_ms = match o.get("timestampMs") {
                        None => now_ms,
                        Some(_) => int(o, "timestampMs")?,
                    };
                    Series {
                        node: node.clone(),
                        value,
                        at_ms,
                        since: Placed {
                            pods: int(o, "podsSince")?,
                            milli_cpu: int(o, "cpuSince")?,
                            memory: int(o, "memorySince")?,
                        },
                    }
                }
                v => Series {
                    node: node.clone(),
                    value: number(v, "")?,
                    at_ms: now_ms,
                    since: Placed::default(),
                },
            });
        }
        out.insert(name.clone(), series);
    }
    Ok(out)
}

fn parse_text(text: &str, now_ms: i64) -> Result<Sources, String> {
    let mut out = Sources::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, labels, rest) = split_sample(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let mut fields = rest.split_whitespace();
        let value = fields
            .next()
            .ok_or_else(|| format!("line {}: no value", i + 1))
            .and_then(|v| parse_value(v).ok_or_else(|| format!("line {}: value {v:?} is not a number", i + 1)))?;
        let at_ms = match fields.next() {
            None => now_ms,
            Some(t) => t
                .parse::<i64>()
                .map_err(|_| format!("line {}: timestamp {t:?} is not a whole number of milliseconds", i + 1))?,
        };
        let node = labels
            .iter()
            .find(|(k, _)| k == "node")
            .or_else(|| labels.iter().find(|(k, _)| k == "instance"))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("line {}: {name} has no node or instance label", i + 1))?;
        out.entry(name.to_owned()).or_default().push(Series {
            node,
            value,
            at_ms,
            since: Placed::default(),
        });
    }
    Ok(out)
}

/// A sample value as Prometheus writes them (`NaN`, `+Inf`, `-Inf` too).
pub fn parse_value(v: &str) -> Option<f64> {
    match v {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        v => v.parse().ok(),
    }
}

/// A sample line's name, labels and what follows them.
type Sample<'a> = (&'a str, Vec<(String, String)>, &'a str);

/// `name{a="x",b="y"} rest` → (name, labels, rest).
fn split_sample(line: &str) -> Result<Sample<'_>, String> {
    let end = line.find(|c: char| c == '{' || c.is_whitespace()).unwrap_or(line.len());
    let name = &line[..end];
    if name.is_empty() {
        return Err("no metric name".into());
    }
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            while chars.next_if(|(_, c)| c.is_whitespace() || *c == ',').is_some() {}
            match chars.peek() {
                Some((i, '}')) => {
                    rest = &body[i + 1..];
                    break;
                }
                None => return Err("unterminated label set".into()),
                _ => {}
            }
            let mut key = String::new();
            while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=') {
                key.push(c);
            }
            if chars.next().is_none() || chars.next().map(|(_, c)| c) != Some('"') {
                return Err(format!("label {:?} has no quoted value", key.trim()));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => return Err("unterminated label value".into()),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                }
            }
            labels.push((key.trim().to_owned(), value));
        }
    }
    Ok((name, labels, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_text_snapshots() {
        let s = parse(
            r#"{"sources": {"lat": {"a": 0.5, "b": {"value": 2, "timestampMs": 7, "podsSince": 3, "cpuSince": 300}}}}"#,
            100,
        )
        .unwrap();
        assert_eq!(s["lat"].len(), 2);
        assert_eq!((s["lat"][0].value, s["lat"][0].at_ms), (0.5, 100));
        assert_eq!(
            (
                s["lat"][1].value,
                s["lat"][1].at_ms,
                s["lat"][1].since.pods,
                s["lat"][1].since.milli_cpu
            ),
            (2.0, 7, 3, 300)
        );
        let s = parse(
            "# HELP lat latency\nlat{node=\"a\"} 0.5\nlat{instance=\"10.0.0.2:9100\",job=\"x\"} +Inf 42\ncpu{node=\"q\\\"uote\"} 1e-3\n",
            100,
        )
        .unwrap();
        assert_eq!(s["lat"][0].node, "a");
        assert_eq!(
            (s["lat"][1].node.as_str(), s["lat"][1].value, s["lat"][1].at_ms),
            ("10.0.0.2:9100", f64::INFINITY, 42)
        );
        assert_eq!((s["cpu"][0].node.as_str(), s["cpu"][0].value), ("q\"uote", 0.001));
        for (text, want) in [
            (
                r#"{"sources": {"lat": {"a": "fast"}}}"#,
                "sources.lat.a: must be a number, not \"fast\"",
            ),
            (
                r#"{"sources": {"lat": {"a": {"valu": 1}}}}"#,
                "sources.lat.a: unknown field \"valu\"",
            ),
            (r#"{"source": {}}"#, "unknown field \"source\" (expected \"sources\")"),
            ("lat{node=\"a\"} fast", "line 1: value \"fast\" is not a number"),
            ("\nlat{job=\"a\"} 1", "line 2: lat has no node or instance label"),
            ("lat{node=\"a} 1", "line 1: unterminated label value"),
        ] {
            let e = parse(text, 0).unwrap_err();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }
}
