//! Conformance of the API server double, over raw HTTP: each test names the
//! kube-apiserver (v1.36) behaviour it mirrors, and checks status codes,
//! headers and bodies as they travel on the wire.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Watch, http, http_with, server};

const SEC: Duration = Duration::from_secs(5);

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// kube-apiserver: `/version`, `/api`, `/api/v1`, `/apis` and
/// `/apis/GROUP/VERSION` describe the served resources (kubectl and kube-rs
/// discovery read them).
#[tokio::test]
async fn discovery() {
    let s = server().await;
    let v = http(s.addr(), "GET", "/version", None, None).await.json();
    assert_eq!((v["major"].as_str(), v["minor"].as_str()), (Some("1"), Some("36")));
    let api = http(s.addr(), "GET", "/api", None, None).await.json();
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], json!(["v1"]));
    let core = http(s.addr(), "GET", "/api/v1", None, None).await.json();
    let core_names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for r in [
        "pods",
        "pods/binding",
        "pods/status",
        "nodes",
        "nodes/status",
        "events",
        "configmaps",
        "namespaces",
        "services",
        "replicationcontrollers",
        "serviceaccounts",
        "serviceaccounts/token",
    ] {
        assert!(core_names.contains(&r), "{r} missing from {core_names:?}");
    }
    let token = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .unwrap();
    assert_eq!(
        (&token["group"], &token["version"], &token["kind"], &token["verbs"]),
        (
            &json!("authentication.k8s.io"),
            &json!("v1"),
            &json!("TokenRequest"),
            &json!(["create"])
        )
    );
    let groups = http(s.addr(), "GET", "/apis", None, None).await.json();
    let group_names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        group_names,
        [
            "apps",
            "policy",
            "storage.k8s.io",
            "coordination.k8s.io",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "rbac.authorization.k8s.io",
            "scheduling.k8s.io",
            "resource.k8s.io"
        ]
    );
    for (gv, name) in [
        ("authentication.k8s.io/v1", "tokenreviews"),
        ("authorization.k8s.io/v1", "subjectaccessreviews"),
    ] {
        let list = http(s.addr(), "GET", &format!("/apis/{gv}"), None, None).await.json();
        let r = &list["resources"][0];
        assert_eq!((&r["name"], &r["namespaced"]), (&json!(name), &json!(false)));
        assert_eq!(r["verbs"], json!(["create"]), "{gv}");
    }
    let rbac = http(s.addr(), "GET", "/apis/rbac.authorization.k8s.io/v1", None, None)
        .await
        .json();
    let rbac: Vec<&str> = rbac["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(rbac, ["clusterroles", "clusterrolebindings", "roles", "rolebindings"]);
    let apps = http(s.addr(), "GET", "/apis/apps/v1", None, None).await.json();
    let apps: Vec<&str> = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(apps, ["replicasets", "statefulsets"]);
    let leases = http(s.addr(), "GET", "/apis/coordination.k8s.io/v1", None, None)
        .await
        .json();
    assert_eq!(leases["resources"][0]["kind"], "Lease");
    let missing = http(s.addr(), "GET", "/apis/apps/v1/deployments", None, None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["reason"], "NotFound");
}

/// kube-apiserver: a list is `KIND List` with `metadata.resourceVersion`;
/// label selectors (`=`, `!=`, `in`, `notin`, exists) and the field
/// selectors pods support (`metadata.name`, `metadata.namespace`,
/// `spec.nodeName` including the empty value, `spec.schedulerName`,
/// `status.phase`); an unsupported field selector is `400 BadRequest`.
#[tokio::test]
async fn lists_and_selectors() {
    let s = server().await;
    let a = s.addr();
    let nodes = http(a, "GET", "/api/v1/nodes", None, None).await.json();
    assert_eq!(
        (nodes["kind"].as_str(), nodes["apiVersion"].as_str()),
        (Some("NodeList"), Some("v1"))
    );
    assert_eq!(
        nodes["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap(),
        s.store().resource_version()
    );
    assert_eq!(names(&nodes), ["n1", "n2", "n3"]);
    let zone_b = http(a, "GET", "/api/v1/nodes?labelSelector=zone%3Db", None, None)
        .await
        .json();
    assert_eq!(names(&zone_b), ["n2", "n3"]);
    let set = http(
        a,
        "GET",
        "/api/v1/nodes?labelSelector=zone%20in%20(a,c),disk",
        None,
        None,
    )
    .await
    .json();
    assert_eq!(names(&set), ["n1"]);
    let pending = http(a, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D", None, None)
        .await
        .json();
    assert_eq!(names(&pending), ["other", "web-1", "web-2"]);
    let ours = http(
        a,
        "GET",
        "/api/v1/pods?fieldSelector=spec.schedulerName%3Dwasm-scheduler,spec.nodeName%3D",
        None,
        None,
    )
    .await
    .json();
    assert_eq!(names(&ours), ["web-1", "web-2"]);
    let running = http(
        a,
        "GET",
        "/api/v1/namespaces/shop/pods?fieldSelector=status.phase%3DRunning",
        None,
        None,
    )
    .await
    .json();
    assert_eq!(names(&running), ["db-0"]);
    let by_name = http(
        a,
        "GET",
        "/api/v1/pods?fieldSelector=metadata.name%3Dweb-2,metadata.namespace%3Dshop",
        None,
        None,
    )
    .await
    .json();
    assert_eq!(names(&by_name), ["web-2"]);
    let bad = http(a, "GET", "/api/v1/nodes?fieldSelector=spec.nodeName%3Dx", None, None).await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["message"],
        "field label not supported: spec.nodeName (kind Node)"
    );
}

/// kube-apiserver: `limit` pages a list, `metadata.continue` resumes it and
/// `remainingItemCount` counts what is left, unless the list has a selector
/// (counting would read every object left); a continue token whose
/// resourceVersion was compacted is `410 Expired`.
#[tokio::test]
async fn pagination() {
    let s = server().await;
    let a = s.addr();
    let first = http(a, "GET", "/api/v1/pods?limit=3", None, None).await.json();
    assert_eq!(names(&first), ["other", "db-0", "web-1"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let second = http(a, "GET", &format!("/api/v1/pods?limit=3&continue={token}"), None, None)
        .await
        .json();
    assert_eq!(names(&second), ["web-2"]);
    assert!(second["metadata"].get("continue").is_none());
    let selected = "/api/v1/pods?limit=2&fieldSelector=metadata.name!%3Dweb-1";
    let first = http(a, "GET", selected, None, None).await.json();
    assert_eq!(names(&first), ["other", "db-0"]);
    assert!(first["metadata"].get("remainingItemCount").is_none(), "{first}");
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let second = http(a, "GET", &format!("{selected}&continue={token}"), None, None)
        .await
        .json();
    assert_eq!(names(&second), ["web-2"]);
    assert!(second["metadata"].get("continue").is_none());
    s.compact();
    let create = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n4"}}).to_string();
    assert_eq!(http(a, "POST", "/api/v1/nodes", None, Some(&create)).await.status, 201);
    s.compact();
    let expired = http(a, "GET", &format!("/api/v1/pods?limit=3&continue={token}"), None, None).await;
    assert_eq!(expired.status, 410);
    assert_eq!(expired.json()["reason"], "Expired");
}

/// kube-apiserver: errors are `Status` objects: `404 NotFound` with
/// `pods "x" not found` and details naming the object.
#[tokio::test]
async fn not_found_status_body() {
    let s = server().await;
    let r = http(s.addr(), "GET", "/api/v1/namespaces/shop/pods/nope", None, None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "pods \"nope\" not found", "reason": "NotFound",
               "details": {"name": "nope", "kind": "pods"}, "code": 404})
    );
    let lease = http(
        s.addr(),
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
        None,
        None,
    )
    .await;
    assert_eq!(lease.json()["message"], "leases.coordination.k8s.io \"x\" not found");
    assert_eq!(lease.json()["details"]["group"], "coordination.k8s.io");
}

/// kube-apiserver: create answers `201` with the stored object (uid,
/// creationTimestamp, resourceVersion set; pods defaulted to
/// `schedulerName: default-scheduler` and phase `Pending`); a duplicate is
/// `409 AlreadyExists`; `generateName` makes a name; a body that does not
/// decode is `400 BadRequest`; a bad name or a pod without containers is
/// `422 Invalid`; the namespace in the body must match the path's.
#[tokio::test]
async fn create() {
    let s = server().await;
    let a = s.addr();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}, "bogusField": 1});
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&pod.to_string()),
    )
    .await;
    assert_eq!(r.status, 201);
    let created = r.json();
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(created["spec"]["schedulerName"], "default-scheduler");
    assert_eq!(created["status"]["phase"], "Pending");
    assert!(created["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(
        created["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(created.get("bogusField").is_none(), "unknown fields are pruned");
    let dup = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&pod.to_string()),
    )
    .await;
    assert_eq!(dup.status, 409);
    assert_eq!(dup.json()["reason"], "AlreadyExists");
    assert_eq!(dup.json()["message"], "pods \"p1\" already exists");
    let generated = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "job-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let g = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&generated.to_string()),
    )
    .await
    .json();
    let gname = g["metadata"]["name"].as_str().unwrap();
    assert!(gname.starts_with("job-") && gname.len() == 9, "{gname}");
    let bad = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p2"}, "spec": {"containers": "nope"}});
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&bad.to_string()),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("Pod in version \"v1\" cannot be handled as a Pod: ")
    );
    let upper = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "Bad_Name"}});
    let r = http(a, "POST", "/api/v1/nodes", None, Some(&upper.to_string())).await;
    assert_eq!((r.status, r.json()["reason"].as_str()), (422, Some("Invalid")));
    let empty = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p3"}, "spec": {"containers": []}});
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&empty.to_string()),
    )
    .await;
    assert_eq!(
        r.json()["message"],
        "Pod \"p3\" is invalid: spec.containers: Required value"
    );
    let other_ns = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p4", "namespace": "shop"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        None,
        Some(&other_ns.to_string()),
    )
    .await;
    assert_eq!(r.status, 400);
    let not_json = http(a, "POST", "/api/v1/nodes", None, Some("{")).await;
    assert_eq!(not_json.status, 400);
}

/// kube-apiserver: `POST pods/NAME/binding` sets `spec.nodeName` and
/// `PodScheduled=True` and answers a `Status` `Success` with code 201; a
/// second binding is `409 Conflict` "pod X is already assigned to node Y";
/// a missing pod is `404`; a binding to a node that does not exist is
/// accepted (the server does not check); a UID precondition that does not
/// match is `409`; the older `POST namespaces/NS/bindings` works the same.
#[tokio::test]
async fn binding() {
    let s = server().await;
    let a = s.addr();
    let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-1"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "n2"}}).to_string();
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/shop/pods/web-1/binding",
        None,
        Some(&body),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let pod = http(a, "GET", "/api/v1/namespaces/shop/pods/web-1", None, None)
        .await
        .json();
    assert_eq!(pod["spec"]["nodeName"], "n2");
    let cond = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap();
    assert_eq!(cond["status"], "True");
    let again = http(
        a,
        "POST",
        "/api/v1/namespaces/shop/pods/web-1/binding",
        None,
        Some(&body),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(
        again.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Operation cannot be fulfilled on pods/binding \"web-1\": pod web-1 is already assigned to node \"n2\"",
               "reason": "Conflict", "details": {"name": "web-1", "kind": "pods/binding"}, "code": 409})
    );
    let gone = http(
        a,
        "POST",
        "/api/v1/namespaces/shop/pods/ghost/binding",
        None,
        Some(&body.replace("web-1", "ghost")),
    )
    .await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["message"], "pods \"ghost\" not found");
    let nowhere = json!({"metadata": {"name": "web-2"}, "target": {"name": "no-such-node"}}).to_string();
    assert_eq!(
        http(
            a,
            "POST",
            "/api/v1/namespaces/shop/pods/web-2/binding",
            None,
            Some(&nowhere)
        )
        .await
        .status,
        201
    );
    let uid = json!({"metadata": {"name": "other", "uid": "not-the-uid"}, "target": {"name": "n1"}}).to_string();
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/default/pods/other/binding",
        None,
        Some(&uid),
    )
    .await;
    assert_eq!(r.status, 409);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("Precondition failed: UID in precondition: not-the-uid")
    );
    let legacy = json!({"metadata": {"name": "other"}, "target": {"name": "n1"}}).to_string();
    assert_eq!(
        http(a, "POST", "/api/v1/namespaces/default/bindings", None, Some(&legacy))
            .await
            .status,
        201
    );
    assert_eq!(s.counters().bindings, 3);
}

/// kube-apiserver: one resourceVersion, increasing across all kinds.
#[tokio::test]
async fn single_resource_version_across_kinds() {
    let s = server().await;
    let a = s.addr();
    let node = http(a, "POST", "/api/v1/nodes", None, Some(r#"{"metadata":{"name":"n9"}}"#))
        .await
        .json();
    let cm = http(
        a,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        None,
        Some(r#"{"metadata":{"name":"c"},"data":{"k":"v"}}"#),
    )
    .await
    .json();
    let lease = http(
        a,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        None,
        Some(r#"{"metadata":{"name":"l"}}"#),
    )
    .await
    .json();
    assert!(rv(&node) < rv(&cm) && rv(&cm) < rv(&lease));
}

/// kube-apiserver: a watch is HTTP 200 streaming one JSON event per line;
/// without a resourceVersion it starts with synthetic `ADDED` events for the
/// current state; from a resourceVersion it sends the changes after it;
/// `allowWatchBookmarks` adds `BOOKMARK`s carrying the latest version;
/// `timeoutSeconds` ends the stream.
#[tokio::test]
async fn watch_events_and_bookmarks() {
    let s = support::server_with(wasmsched_apiserver_sim::Config {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    })
    .await;
    let a = s.addr();
    let mut w = Watch::open(a, "/api/v1/namespaces/shop/pods?watch=1").await;
    assert_eq!(w.status, 200);
    let mut initial = Vec::new();
    for _ in 0..3 {
        let e = w.next(SEC).await.unwrap();
        assert_eq!(e["type"], "ADDED");
        initial.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(initial, ["db-0", "web-1", "web-2"]);
    let list = http(a, "GET", "/api/v1/nodes", None, None).await.json();
    let from = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut w2 = Watch::open(
        a,
        &format!("/api/v1/namespaces/shop/pods?watch=true&resourceVersion={from}&allowWatchBookmarks=true"),
    )
    .await;
    let body = r#"{"metadata":{"name":"web-1"},"target":{"name":"n1"}}"#;
    assert_eq!(
        http(
            a,
            "POST",
            "/api/v1/namespaces/shop/pods/web-1/binding",
            None,
            Some(body)
        )
        .await
        .status,
        201
    );
    let e = w.next(SEC).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["spec"]["nodeName"].as_str()),
        (Some("MODIFIED"), Some("n1"))
    );
    let e2 = w2.next_object(SEC).await.unwrap();
    assert_eq!(e2, e, "both watches see the same event");
    let bookmark = w2.next(SEC).await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["kind"], "Pod");
    assert_eq!(rv(&bookmark["object"]), rv(&e["object"]));
    let done = http(a, "GET", "/api/v1/nodes?watch=1&timeoutSeconds=1", None, None).await;
    assert_eq!(done.status, 200);
    assert_eq!(done.events().len(), 3, "three ADDED, then the stream ends after 1 s");
}

/// kube-apiserver: a watch from a resourceVersion older than the server
/// keeps answers HTTP 200 and a single `ERROR` event whose object is a
/// `Status` 410 `Expired` "too old resource version: R (OLDEST)", then
/// ends; a list with `resourceVersionMatch=Exact` on it is 410 directly.
#[tokio::test]
async fn too_old_resource_version() {
    let s = server().await;
    let a = s.addr();
    http(a, "POST", "/api/v1/nodes", None, Some(r#"{"metadata":{"name":"n9"}}"#)).await;
    s.compact();
    let now = s.store().resource_version();
    let r = http(a, "GET", "/api/v1/pods?watch=1&resourceVersion=2", None, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.events(),
        vec![
            json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("too old resource version: 2 ({now})"), "reason": "Expired", "code": 410}})
        ]
    );
    let list = http(
        a,
        "GET",
        "/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact",
        None,
        None,
    )
    .await;
    assert_eq!(list.status, 410);
    assert_eq!(list.json()["reason"], "Expired");
    // the current version still works
    let ok = http(
        a,
        "GET",
        &format!("/api/v1/pods?watch=1&resourceVersion={now}&timeoutSeconds=1"),
        None,
        None,
    )
    .await;
    assert!(ok.events().is_empty());
}

/// kube-apiserver (watch cache): a watcher with a selector sees an object
/// that stops matching as `DELETED` and one that starts matching as `ADDED`
/// (a pending-pods watch with `spec.nodeName=` loses a pod when it binds).
#[tokio::test]
async fn watch_with_selector_sees_objects_leave() {
    let s = server().await;
    let a = s.addr();
    let list = http(a, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D", None, None)
        .await
        .json();
    let from = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut w = Watch::open(
        a,
        &format!("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3D&resourceVersion={from}"),
    )
    .await;
    let mut labelled = Watch::open(
        a,
        &format!("/api/v1/nodes?watch=1&labelSelector=pool%3Dgpu&resourceVersion={from}"),
    )
    .await;
    http(
        a,
        "POST",
        "/api/v1/namespaces/shop/pods/web-2/binding",
        None,
        Some(r#"{"metadata":{"name":"web-2"},"target":{"name":"n1"}}"#),
    )
    .await;
    let e = w.next(SEC).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("web-2"))
    );
    let patch = r#"{"metadata":{"labels":{"pool":"gpu"}}}"#;
    let r = http(
        a,
        "PATCH",
        "/api/v1/nodes/n2",
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(r.status, 200);
    let e = labelled.next(SEC).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("n2"))
    );
}

/// kube-apiserver (streaming lists): `sendInitialEvents=true` with
/// `allowWatchBookmarks` sends the state as `ADDED`, then a `BOOKMARK`
/// annotated `k8s.io/initial-events-end: "true"`.
#[tokio::test]
async fn streaming_list() {
    let s = server().await;
    let mut w = Watch::open(
        s.addr(),
        "/api/v1/nodes?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    )
    .await;
    for _ in 0..3 {
        assert_eq!(w.next(SEC).await.unwrap()["type"], "ADDED");
    }
    let end = w.next(SEC).await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

/// kube-apiserver: an update (PUT) with a stale `metadata.resourceVersion`
/// is `409 Conflict` "the object has been modified; please apply your
/// changes to the latest version and try again"; a no-op update does not
/// change the resourceVersion; PUT of a missing object is 404.
#[tokio::test]
async fn optimistic_concurrency() {
    let s = server().await;
    let a = s.addr();
    let path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/wasm-scheduler";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "wasm-scheduler"},
                       "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
    let created = http(
        a,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        None,
        Some(&lease.to_string()),
    )
    .await
    .json();
    let mut mine = created.clone();
    mine["spec"]["holderIdentity"] = json!("b");
    let r = http(a, "PUT", path, None, Some(&mine.to_string())).await;
    assert_eq!(r.status, 200);
    let updated = r.json();
    assert!(rv(&updated) > rv(&created));
    let stale = http(a, "PUT", path, None, Some(&mine.to_string())).await;
    assert_eq!(stale.status, 409);
    assert_eq!(
        stale.json()["message"],
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"wasm-scheduler\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let same = http(a, "PUT", path, None, Some(&updated.to_string())).await.json();
    assert_eq!(rv(&same), rv(&updated));
    let missing = http(
        a,
        "PUT",
        &path.replace("wasm-scheduler", "nope"),
        None,
        Some(&mine.to_string().replace("wasm-scheduler", "nope")),
    )
    .await;
    assert_eq!(missing.status, 404);
}

/// kube-apiserver: PATCH with `application/merge-patch+json`,
/// `application/strategic-merge-patch+json` (lists with a merge key, such as
/// `status.conditions` by `type`, merge item by item) and
/// `application/json-patch+json`; other types are `415`; the `status`
/// subresource changes only the status and the main resource ignores status
/// changes; a pod's `spec.nodeName` cannot be changed by an update (`422`).
#[tokio::test]
async fn patches_and_status_subresource() {
    let s = server().await;
    let a = s.addr();
    let pod = "/api/v1/namespaces/shop/pods/web-1";
    let r = http(
        a,
        "PATCH",
        pod,
        Some("application/merge-patch+json"),
        Some(r#"{"metadata":{"labels":{"tier":"front"}}}"#),
    )
    .await;
    assert_eq!(r.json()["metadata"]["labels"], json!({"app": "web", "tier": "front"}));
    let cond = r#"{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available"}]}}"#;
    let r = http(
        a,
        "PATCH",
        &format!("{pod}/status"),
        Some("application/strategic-merge-patch+json"),
        Some(cond),
    )
    .await;
    assert_eq!(r.status, 200);
    let other = r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#;
    let r = http(
        a,
        "PATCH",
        &format!("{pod}/status"),
        Some("application/strategic-merge-patch+json"),
        Some(other),
    )
    .await;
    let conditions = r.json()["status"]["conditions"].clone();
    let types: Vec<&str> = conditions
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["PodScheduled", "Ready"]);
    let jp = r#"[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]"#;
    let r = http(a, "PATCH", pod, Some("application/json-patch+json"), Some(jp)).await;
    assert_eq!(r.json()["metadata"]["annotations"], json!({"a": "b"}));
    let apply = http(a, "PATCH", pod, Some("application/apply-patch+yaml"), Some("{}")).await;
    assert_eq!(
        (apply.status, apply.json()["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    // the main resource ignores status; status ignores spec
    let r = http(
        a,
        "PATCH",
        pod,
        Some("application/merge-patch+json"),
        Some(r#"{"status":{"phase":"Running"}}"#),
    )
    .await;
    assert_eq!(r.json()["status"]["phase"], "Pending");
    let r = http(
        a,
        "PATCH",
        &format!("{pod}/status"),
        Some("application/merge-patch+json"),
        Some(r#"{"status":{"phase":"Running"},"metadata":{"labels":{"x":"y"}}}"#),
    )
    .await;
    assert_eq!(r.json()["status"]["phase"], "Running");
    assert!(r.json()["metadata"]["labels"].get("x").is_none());
    let r = http(
        a,
        "PATCH",
        pod,
        Some("application/merge-patch+json"),
        Some(r#"{"spec":{"nodeName":"n1"}}"#),
    )
    .await;
    assert_eq!((r.status, r.json()["reason"].as_str()), (422, Some("Invalid")));
    let node = http(
        a,
        "PATCH",
        "/api/v1/nodes/n1",
        Some("application/strategic-merge-patch+json"),
        Some(r#"{"spec":{"unschedulable":true}}"#),
    )
    .await;
    assert_eq!(node.json()["spec"]["unschedulable"], true);
}

/// kube-apiserver: DELETE answers 200 with the object, watchers see
/// `DELETED`, a second DELETE is 404, and `preconditions` that do not match
/// are `409`.
#[tokio::test]
async fn delete() {
    let s = server().await;
    let a = s.addr();
    let from = s.store().resource_version();
    let mut w = Watch::open(
        a,
        &format!("/api/v1/namespaces/shop/pods?watch=1&resourceVersion={from}"),
    )
    .await;
    let pre = r#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"wrong"}}"#;
    let r = http(a, "DELETE", "/api/v1/namespaces/shop/pods/web-1", None, Some(pre)).await;
    assert_eq!(r.status, 409);
    let r = http(
        a,
        "DELETE",
        "/api/v1/namespaces/shop/pods/web-1",
        None,
        Some(r#"{"gracePeriodSeconds":0}"#),
    )
    .await;
    assert_eq!((r.status, r.json()["metadata"]["name"].as_str()), (200, Some("web-1")));
    let e = w.next(SEC).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("web-1"))
    );
    assert_eq!(
        http(a, "DELETE", "/api/v1/namespaces/shop/pods/web-1", None, None)
            .await
            .status,
        404
    );
}

/// kube-apiserver: core/v1 events, events.k8s.io/v1 events and configmaps
/// (with `binaryData`) are created, listed and read back.
#[tokio::test]
async fn events_and_configmaps() {
    let s = server().await;
    let a = s.addr();
    let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web-1.1", "namespace": "shop"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "wasm-scheduler", "reportingInstance": "wasm-scheduler-x",
        "action": "Binding", "reason": "Scheduled", "type": "Normal", "note": "Successfully assigned shop/web-1 to n1",
        "regarding": {"kind": "Pod", "namespace": "shop", "name": "web-1"}});
    assert_eq!(
        http(
            a,
            "POST",
            "/apis/events.k8s.io/v1/namespaces/shop/events",
            None,
            Some(&ev.to_string())
        )
        .await
        .status,
        201
    );
    let list = http(a, "GET", "/apis/events.k8s.io/v1/events", None, None).await.json();
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["items"][0]["note"], "Successfully assigned shop/web-1 to n1");
    let core = json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web-1"}, "reason": "FailedScheduling", "message": "0/3 nodes are available", "type": "Warning", "count": 1});
    assert_eq!(
        http(
            a,
            "POST",
            "/api/v1/namespaces/shop/events",
            None,
            Some(&core.to_string())
        )
        .await
        .status,
        201
    );
    let cm = json!({"metadata": {"name": "plugins"}, "binaryData": {"p.wasm": "AGFzbQ=="}});
    assert_eq!(
        http(
            a,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some(&cm.to_string())
        )
        .await
        .status,
        201
    );
    let back = http(a, "GET", "/api/v1/namespaces/default/configmaps/plugins", None, None)
        .await
        .json();
    assert_eq!(back["binaryData"]["p.wasm"], "AGFzbQ==");
}

/// kube-apiserver: `kubectl get` asks for `Table`s and gets the columns
/// the server prints for nodes and pods.
#[tokio::test]
async fn tables_for_kubectl() {
    let s = server().await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let t = http_with(s.addr(), "GET", "/api/v1/nodes", &[("Accept", accept)])
        .await
        .json();
    assert_eq!(t["kind"], "Table");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols[..5], ["Name", "Status", "Roles", "Age", "Version"]);
    assert_eq!(t["rows"][2]["cells"][1], "NotReady,SchedulingDisabled");
    let p = http_with(
        s.addr(),
        "GET",
        "/api/v1/namespaces/shop/pods/db-0",
        &[("Accept", accept)],
    )
    .await
    .json();
    assert_eq!(p["rows"][0]["cells"][2], "Running");
    assert_eq!(p["rows"][0]["cells"][6], "n1");
}

/// Fault injection: the next N requests fail with 500 `InternalError`, 429
/// carries `Retry-After`, a fraction fails, a pause holds requests, latency
/// delays them, all scriptable over HTTP at `/_sim/faults`; dropping the
/// watches ends every open stream.
#[tokio::test]
async fn fault_injection() {
    let s = server().await;
    let a = s.addr();
    s.faults().fail_next(2, 500);
    for _ in 0..2 {
        let r = http(a, "GET", "/api/v1/nodes", None, None).await;
        assert_eq!((r.status, r.json()["reason"].as_str()), (500, Some("InternalError")));
    }
    assert_eq!(http(a, "GET", "/api/v1/nodes", None, None).await.status, 200);
    let req = json!({"fail": [{"code": 429, "count": 1, "pathContains": "/binding"}]}).to_string();
    assert_eq!(http(a, "POST", "/_sim/faults", None, Some(&req)).await.status, 200);
    assert_eq!(
        http(a, "GET", "/api/v1/nodes", None, None).await.status,
        200,
        "only bindings match"
    );
    let r = http(
        a,
        "POST",
        "/api/v1/namespaces/shop/pods/web-1/binding",
        None,
        Some(r#"{"target":{"name":"n1"}}"#),
    )
    .await;
    assert_eq!((r.status, r.header("retry-after")), (429, Some("1")));
    assert_eq!(r.json()["reason"], "TooManyRequests");
    s.faults().fail_fraction(0.5, 500);
    let mut failed = 0;
    for _ in 0..200 {
        if http(a, "GET", "/version", None, None).await.status == 500 {
            failed += 1;
        }
    }
    assert!((60..140).contains(&failed), "{failed} of 200 failed at 50 %");
    http(
        a,
        "POST",
        "/_sim/faults",
        None,
        Some(r#"{"clear":true,"latencyMs":200}"#),
    )
    .await;
    let t = std::time::Instant::now();
    assert_eq!(http(a, "GET", "/version", None, None).await.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(200));
    http(a, "POST", "/_sim/faults", None, Some(r#"{"clear":true,"paused":true}"#)).await;
    let held = tokio::spawn(async move { http(a, "GET", "/version", None, None).await.status });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "paused requests wait");
    http(a, "POST", "/_sim/faults", None, Some(r#"{"paused":false}"#)).await;
    assert_eq!(held.await.unwrap(), 200);
    let mut w = Watch::open(a, "/api/v1/nodes?watch=1").await;
    for _ in 0..3 {
        w.next(SEC).await.unwrap();
    }
    http(a, "POST", "/_sim/faults", None, Some(r#"{"dropWatches":true}"#)).await;
    assert!(w.next(SEC).await.is_none(), "the stream ends");
    let bad = http(a, "POST", "/_sim/faults", None, Some(r#"{"explode":true}"#)).await;
    assert_eq!(bad.status, 400);
    let stats = http(a, "GET", "/_sim/stats", None, None).await.json();
    assert!(stats["injectedFaults"].as_u64().unwrap() >= 63);
}

/// POST a JSON body, answer parsed.
async fn post(s: &wasmsched_apiserver_sim::ApiServer, path: &str, body: Value) -> (u16, Value) {
    let r = http(s.addr(), "POST", path, None, Some(&body.to_string())).await;
    (r.status, r.json())
}

fn token_review(token: &str) -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
}

const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const SARS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// kube-apiserver: `POST serviceaccounts/NAME/token` answers `201` with the
/// TokenRequest (audiences defaulted to the API's, `expirationSeconds` to
/// 3600, `status.token` and `status.expirationTimestamp` set); less than 10
/// minutes is `422`; a missing account is `404`. A TokenReview of the token
/// (`201`, the review echoed with its status) authenticates as
/// `system:serviceaccount:NS:NAME` with the account's UID and groups; a
/// bogus token, or one whose account was deleted, is not authenticated.
/// Every namespace has its `default` account (kube-controller-manager's).
#[tokio::test]
async fn service_account_tokens_and_token_reviews() {
    let s = server().await;
    // as kube-controller-manager does, every namespace has its `default` account
    let r = http(
        s.addr(),
        "GET",
        "/api/v1/namespaces/shop/serviceaccounts/default",
        None,
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prom"}});
    let (code, created) = post(&s, "/api/v1/namespaces/shop/serviceaccounts", sa.clone()).await;
    assert_eq!(code, 201);
    let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
    let path = "/api/v1/namespaces/shop/serviceaccounts/prom/token";
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let (code, issued) = post(&s, path, request.clone()).await;
    assert_eq!(code, 201, "{issued}");
    assert_eq!(
        (&issued["kind"], &issued["apiVersion"]),
        (&json!("TokenRequest"), &json!("authentication.k8s.io/v1"))
    );
    assert_eq!(issued["metadata"]["name"], "prom");
    assert_eq!(issued["metadata"]["namespace"], "shop");
    assert_eq!(issued["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        issued["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let token = issued["status"]["token"].as_str().unwrap().to_owned();
    assert!(token.len() >= 32, "{token}");
    let expires: k8s_openapi::jiff::Timestamp = issued["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let created_at: k8s_openapi::jiff::Timestamp = issued["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(expires.as_second() - created_at.as_second(), 3600);

    let (code, review) = post(&s, TOKEN_REVIEWS, token_review(&token)).await;
    assert_eq!(code, 201);
    assert_eq!(review["kind"], "TokenReview");
    assert_eq!(review["spec"]["token"], token);
    let status = &review["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["user"]["username"], "system:serviceaccount:shop:prom");
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:shop",
            "system:authenticated"
        ])
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );

    let (code, bogus) = post(&s, TOKEN_REVIEWS, token_review("not-a-token")).await;
    assert_eq!(code, 201);
    assert_eq!(bogus["status"], json!({"user": {}, "error": "invalid bearer token"}));
    let (code, empty) = post(&s, TOKEN_REVIEWS, token_review("")).await;
    assert_eq!(
        (code, empty["message"].as_str()),
        (400, Some("token is required for TokenReview in authentication"))
    );

    // the token dies with its account, even when one of the same name returns
    let r = http(
        s.addr(),
        "DELETE",
        "/api/v1/namespaces/shop/serviceaccounts/prom",
        None,
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    let (_, gone) = post(&s, TOKEN_REVIEWS, token_review(&token)).await;
    assert_eq!(gone["status"]["authenticated"], Value::Null);
    assert_eq!(
        gone["status"]["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );
    post(&s, "/api/v1/namespaces/shop/serviceaccounts", sa).await;
    let (_, again) = post(&s, TOKEN_REVIEWS, token_review(&token)).await;
    assert_eq!(again["status"]["authenticated"], Value::Null);

    let (code, missing) = post(&s, "/api/v1/namespaces/shop/serviceaccounts/ghost/token", request).await;
    assert_eq!(
        (code, missing["message"].as_str()),
        (404, Some("serviceaccounts \"ghost\" not found"))
    );
    let short = json!({"spec": {"expirationSeconds": 60}});
    let (code, invalid) = post(&s, path, short).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    assert_eq!(invalid["details"]["group"], "authentication.k8s.io");
    let r = http(s.addr(), "GET", path, None, None).await;
    assert_eq!(r.status, 405);

    // static tokens, as --token-auth-file declares them: from Rust and over /_sim/
    s.add_token("admin-token", "admin", &["system:masters"]);
    let (_, admin) = post(&s, TOKEN_REVIEWS, token_review("admin-token")).await;
    assert_eq!(admin["status"]["user"]["username"], "admin");
    assert_eq!(
        admin["status"]["user"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    let (code, _) = post(
        &s,
        "/_sim/tokens",
        json!({"token": "t2", "user": "alice", "uid": "42", "groups": ["dev"]}),
    )
    .await;
    assert_eq!(code, 201);
    let (_, alice) = post(&s, TOKEN_REVIEWS, token_review("t2")).await;
    assert_eq!(
        alice["status"]["user"],
        json!({"username": "alice", "uid": "42", "groups": ["dev", "system:authenticated"]})
    );
    let token = s.create_token("shop", "prom").unwrap();
    let (_, review) = post(&s, TOKEN_REVIEWS, token_review(&token)).await;
    assert_eq!(review["status"]["authenticated"], true);
}

fn sar_non_resource(user: &str, groups: &[&str], path: &str, verb: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
           "spec": {"user": user, "groups": groups, "nonResourceAttributes": {"path": path, "verb": verb}}})
}

fn sar_resource(user: &str, namespace: &str, verb: &str, resource: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
           "spec": {"user": user, "resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource}}})
}

/// kube-apiserver's RBAC authorizer behind `subjectaccessreviews`: a
/// ClusterRoleBinding grants its ClusterRole's non-resource URLs to a
/// ServiceAccount, with RBAC's reason; another path or user is denied with
/// no reason (no opinion); a RoleBinding grants only in its namespace;
/// `system:masters` is allowed everything; a spec with neither or both kinds
/// of attributes, or no user nor group, is `422`.
#[tokio::test]
async fn subject_access_reviews_evaluate_rbac() {
    let s = server().await;
    for (path, obj) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "metrics-reader"},
                   "rules": [{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "prom-metrics"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
                   "subjects": [{"kind": "ServiceAccount", "name": "prom", "namespace": "monitoring"}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/shop/roles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader"},
                   "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/shop/rolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "read-pods"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                   "subjects": [{"kind": "User", "name": "alice"}]}),
        ),
    ] {
        let (code, body) = post(&s, path, obj).await;
        assert_eq!(code, 201, "{body}");
    }
    let prom = "system:serviceaccount:monitoring:prom";
    let (code, allowed) = post(&s, SARS, sar_non_resource(prom, &[], "/metrics", "get")).await;
    assert_eq!(code, 201);
    assert_eq!(allowed["kind"], "SubjectAccessReview");
    assert_eq!(allowed["spec"]["nonResourceAttributes"]["path"], "/metrics");
    assert_eq!(
        allowed["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"prom-metrics\" of ClusterRole \"metrics-reader\" to ServiceAccount \"prom/monitoring\""})
    );
    let (_, prefix) = post(&s, SARS, sar_non_resource(prom, &[], "/debug/pprof/", "get")).await;
    assert_eq!(prefix["status"]["allowed"], true);
    for (user, path, verb) in [
        (prom, "/healthz", "get"),
        (prom, "/metrics", "post"),
        ("system:serviceaccount:default:prom", "/metrics", "get"),
    ] {
        let (_, denied) = post(&s, SARS, sar_non_resource(user, &[], path, verb)).await;
        assert_eq!(denied["status"], json!({"allowed": false}), "{user} {verb} {path}");
    }
    let (_, masters) = post(
        &s,
        SARS,
        sar_non_resource("admin", &["system:masters"], "/anything", "delete"),
    )
    .await;
    assert_eq!(masters["status"], json!({"allowed": true}));

    let (_, in_shop) = post(&s, SARS, sar_resource("alice", "shop", "list", "pods")).await;
    assert_eq!(
        in_shop["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"read-pods/shop\" of Role \"pod-reader\" to User \"alice\""})
    );
    for (ns, verb, resource) in [
        ("default", "list", "pods"),
        ("", "list", "pods"),
        ("shop", "delete", "pods"),
        ("shop", "get", "nodes"),
    ] {
        let (_, denied) = post(&s, SARS, sar_resource("alice", ns, verb, resource)).await;
        assert_eq!(denied["status"]["allowed"], false, "{ns} {verb} {resource}");
    }

    let neither =
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "alice"}});
    let (code, e) = post(&s, SARS, neither).await;
    assert_eq!((code, e["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        e["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    let mut both = sar_resource("alice", "shop", "get", "pods");
    both["spec"]["nonResourceAttributes"] = json!({"path": "/metrics", "verb": "get"});
    let (code, e) = post(&s, SARS, both).await;
    assert_eq!(code, 422);
    assert_eq!(
        e["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.nonResourceAttributes: Invalid value: {\"Path\":\"/metrics\",\"Verb\":\"get\"}: cannot be specified in combination with resourceAttributes"
    );
    let (code, e) = post(&s, SARS, sar_non_resource("", &[], "/metrics", "get")).await;
    assert_eq!(code, 422);
    assert_eq!(
        e["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
    );
    assert_eq!(e["details"]["causes"][0]["field"], "spec.user");
    // reviews are answered, never stored
    let r = http(s.addr(), "GET", SARS, None, None).await;
    assert_eq!(r.status, 405);
}

/// RBAC's objects are named as kube-apiserver's `ValidateRBACName` allows:
/// any path segment, so `system:auth-delegator` and `wasmsched:viewer` are
/// names; a slash or a percent sign is not.
#[tokio::test]
async fn rbac_names_are_path_segments() {
    let s = server().await;
    let role = |name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
               "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    };
    let path = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let (code, body) = post(&s, path, role("wasmsched:viewer")).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = post(&s, path, role("a/b")).await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with(r#"metadata.name: Invalid value: "a/b": may not contain '/'"#),
        "{body}"
    );
}

/// Validation and admission as a cluster's: every pod every bench workload
/// makes (with the PriorityClasses the bench creates), and every object of
/// the bundled example cluster (`demo`, `simulate` and the README's), is
/// accepted and admitted as kube-apiserver would, each pod getting the
/// priority its class gives; a pod stating another priority is refused.
#[tokio::test]
async fn bench_workloads_and_the_example_cluster_pass_validation_and_admission() {
    use wasmsched_core::synthetic::{self, Workload};
    let s = server().await;
    for pc in synthetic::priority_classes() {
        s.create(pc).unwrap();
    }
    let mut pods: Vec<k8s_openapi::api::core::v1::Pod> = synthetic::pods(500, "wasm-scheduler", 7);
    for (name, w) in Workload::ALL {
        for (first, n) in [(0, 50), (50, 50)] {
            let mut batch = synthetic::workload_pods(*w, first, n, "wasm-scheduler", 7);
            for p in &mut batch {
                p.metadata.name = Some(format!("{name}-{}", p.metadata.name.as_deref().unwrap()));
            }
            pods.extend(batch);
        }
    }
    let mut high = 0;
    for p in &pods {
        let mut v = serde_json::to_value(p).unwrap();
        v["metadata"].as_object_mut().unwrap().remove("uid");
        let want = p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        let stored = s.create(v).unwrap_or_else(|e| panic!("{:?}: {e}", p.metadata.name));
        assert_eq!(stored["spec"]["priority"], want, "{:?}", p.metadata.name);
        high += usize::from(want > 0);
    }
    assert!(high > 50, "{high} pods of a class");

    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../cli/data/example-cluster.yaml")).unwrap();
    let fresh = wasmsched_apiserver_sim::ApiServer::start("127.0.0.1:0".parse().unwrap(), Default::default())
        .await
        .unwrap();
    let objects = wasmsched_core::fixture::parse_objects(&example).unwrap();
    assert!(objects.ignored.is_empty(), "{:?}", objects.ignored);
    fresh
        .load(&objects)
        .unwrap_or_else(|e| panic!("the example cluster is refused: {e}"));
    let api: k8s_openapi::api::core::v1::Pod = fresh.get("shop", "api-1").unwrap();
    assert_eq!(api.spec.unwrap().priority, Some(1000));

    let refused = s
        .create(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "bench"},
            "spec": {"priority": 1000, "containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .unwrap_err();
    assert_eq!(refused.code, 403, "{refused}");
}
