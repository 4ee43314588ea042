//! The patch types kube-apiserver accepts: JSON merge patch (RFC 7386),
//! strategic merge patch (merge patch where lists with a merge key are merged
//! by that key, as the built-in types declare them), and JSON patch (RFC 6902).

use serde_json::{Map, Value};

/// JSON merge patch: objects merge recursively, `null` deletes, anything
/// else (lists included) replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The merge key of a list field of the built-in types, by its path of
/// field names (the `patchMergeKey` tags of the Go types).
fn merge_key(path: &[&str]) -> Option<&'static str> {
    let last = *path.last()?;
    Some(match last {
        "conditions" => "type",
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "containerStatuses"
        | "initContainerStatuses"
        | "ephemeralContainerStatuses"
        | "volumes"
        | "env"
        | "resourceClaims"
        | "resourceClaimStatuses" => "name",
        "volumeMounts" => "mountPath",
        "ownerReferences" => "uid",
        "ports" if path.len() >= 2 && path[path.len() - 2] == "containers" => "containerPort",
        "addresses" => "type",
        "taints" => "key",
        "podIPs" | "hostIPs" => "ip",
        _ => return None,
    })
}

/// Strategic merge patch for the built-in types: like [`merge`], but a list
/// whose field has a merge key is merged item by item (items with
/// `"$patch": "delete"` are removed), and `$retainKeys`/`$setElementOrder`
/// directives are accepted and ignored.
pub fn strategic(target: &mut Value, patch: &Value) {
    strategic_at(target, patch, &mut Vec::new());
}

fn strategic_at<'a>(target: &mut Value, patch: &'a Value, path: &mut Vec<&'a str>) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut v = patch.clone();
        v.as_object_mut().expect("object").remove("$patch");
        *target = v;
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        path.push(k);
        match (v, merge_key(path)) {
            (Value::Array(items), Some(key)) => {
                let slot = t.entry(k.clone()).or_insert_with(|| Value::Array(Vec::new()));
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let list = slot.as_array_mut().expect("array");
                for item in items {
                    let id = item.get(key);
                    let pos = id.and_then(|id| list.iter().position(|x| x.get(key) == Some(id)));
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (pos, delete) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (None, true) => {}
                        (Some(i), false) => strategic_at(&mut list[i], item, path),
                        (None, false) => {
                            let mut fresh = Value::Object(Map::new());
                            strategic_at(&mut fresh, item, path);
                            list.push(fresh);
                        }
                    }
                }
            }
            _ => strategic_at(t.entry(k.clone()).or_insert(Value::Null), v, path),
        }
        path.pop();
    }
}

/// JSON patch (RFC 6902): `add`, `remove`, `replace`, `test`, `move`, `copy`.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("a JSON patch is a list of operations")?;
    for (i, op) in ops.iter().enumerate() {
        let name = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or(format!("operation {i}: no `op`"))?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or(format!("operation {i}: no `path`"))?;
        let value = || op.get("value").cloned().ok_or(format!("operation {i}: no `value`"));
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or(format!("operation {i}: no `from`"))
        };
        match name {
            "add" => add(target, path, value()?),
            "remove" => remove(target, path).map(drop),
            "replace" => {
                let slot = target
                    .pointer_mut(path)
                    .ok_or(format!("replace operation does not apply: doc is missing path: {path}"))?;
                *slot = value()?;
                Ok(())
            }
            "test" => {
                if target.pointer(path) == Some(&value()?) {
                    Ok(())
                } else {
                    Err(format!("testing value {path} failed"))
                }
            }
            "move" => {
                let v = remove(target, from()?)?;
                add(target, path, v)
            }
            "copy" => {
                let v = target.pointer(from()?).cloned().ok_or(format!(
                    "copy operation does not apply: doc is missing from path: {}",
                    from()?
                ))?;
                add(target, path, v)
            }
            other => Err(format!("unexpected operation {other:?}")),
        }
        .map_err(|e| format!("operation {i}: {e}"))?;
    }
    Ok(())
}

fn split_pointer(path: &str) -> Result<(&str, String), String> {
    let i = path.rfind('/').ok_or(format!("invalid path {path:?}"))?;
    Ok((&path[..i], path[i + 1..].replace("~1", "/").replace("~0", "~")))
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse().map_err(|_| format!("invalid index {last:?}"))?
            };
            if i > a.len() {
                return Err(format!("index {i} out of bounds"));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("add operation does not apply: doc is missing path: {path}")),
    }
}

fn remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_pointer(path)?;
    let missing = || format!("remove operation does not apply: doc is missing path: {path}");
    match target.pointer_mut(parent) {
        Some(Value::Object(m)) => m.remove(&last).ok_or_else(missing),
        Some(Value::Array(a)) => {
            let i: usize = last.parse().map_err(|_| missing())?;
            (i < a.len()).then(|| a.remove(i)).ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut v = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge(&mut v, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(v, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }

    #[test]
    fn strategic_patch_merges_conditions_by_type() {
        let mut pod = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
            {"type": "Ready", "status": "False"}]}});
        strategic(
            &mut pod,
            &json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True", "reason": null},
            {"type": "Initialized", "status": "True"}]}}),
        );
        assert_eq!(
            pod,
            json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
            {"type": "Initialized", "status": "True"}]}})
        );
        strategic(
            &mut pod,
            &json!({"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}}),
        );
        assert_eq!(pod["status"]["conditions"].as_array().unwrap().len(), 2);
        // lists without a merge key are replaced
        let mut v = json!({"spec": {"tolerations": [{"key": "a"}]}});
        strategic(&mut v, &json!({"spec": {"tolerations": [{"key": "b"}]}}));
        assert_eq!(v, json!({"spec": {"tolerations": [{"key": "b"}]}}));
    }

    #[test]
    fn json_patch_ops() {
        let mut v = json!({"metadata": {"labels": {"a": "1"}}, "l": [1, 3]});
        json_patch(
            &mut v,
            &json!([
                {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
                {"op": "add", "path": "/l/1", "value": 2},
                {"op": "replace", "path": "/metadata/labels/a", "value": "x"},
                {"op": "test", "path": "/l/0", "value": 1},
                {"op": "remove", "path": "/l/2"},
            ]),
        )
        .unwrap();
        assert_eq!(v, json!({"metadata": {"labels": {"a": "x", "b/c": "2"}}, "l": [1, 2]}));
        let err = json_patch(&mut v, &json!([{"op": "replace", "path": "/nope/x", "value": 1}])).unwrap_err();
        assert!(err.contains("missing path: /nope/x"), "{err}");
    }
}
