//! kube-controller-manager's resourceclaim controller as the API server
//! double plays it, seen over HTTP by watches: a pod's claim appears from its
//! template between the pod's `ADDED` and the `MODIFIED` that names it in the
//! pod's status, and is released and deleted with the pod. (The controller's
//! rules one by one are unit-tested in `crates/apiserver-sim/src/resourceclaim.rs`.)

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Watch, http, server, server_with};
use wasmsched_apiserver_sim::Config;

const SEC: Duration = Duration::from_secs(5);
const CLAIMS: &str = "/apis/resource.k8s.io/v1/namespaces/shop/resourceclaims";

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

async fn send(addr: std::net::SocketAddr, method: &str, path: &str, body: &Value) -> Value {
    let r = http(addr, method, path, None, Some(&body.to_string())).await;
    assert!(
        r.status < 300,
        "{method} {path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// A template `gpu` and a pod `trainer` using it, in `shop`.
async fn template_and_pod(addr: std::net::SocketAddr) -> Value {
    let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu"},
        "spec": {"metadata": {"labels": {"team": "ml"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}});
    send(
        addr,
        "POST",
        "/apis/resource.k8s.io/v1/namespaces/shop/resourceclaimtemplates",
        &template,
    )
    .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer"},
        "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"claims": [{"name": "accel"}]}}],
            "resourceClaims": [{"name": "accel", "resourceClaimTemplateName": "gpu"}]}});
    send(addr, "POST", "/api/v1/namespaces/shop/pods", &pod).await
}

#[tokio::test]
async fn a_pods_claim_comes_from_its_template_and_goes_with_the_pod() {
    let s = server().await;
    let a = s.addr();
    let from = s.store().resource_version();
    let mut pods = Watch::open(
        a,
        &format!("/api/v1/namespaces/shop/pods?watch=1&resourceVersion={from}"),
    )
    .await;
    let mut claims = Watch::open(a, &format!("{CLAIMS}?watch=1&resourceVersion={from}")).await;
    let created = template_and_pod(a).await;
    assert!(
        created["status"].get("resourceClaimStatuses").is_none(),
        "the create answers before the controller's write"
    );

    let added = pods.next(SEC).await.unwrap();
    let claim = claims.next(SEC).await.unwrap();
    let named = pods.next(SEC).await.unwrap();
    assert_eq!(
        (added["type"].as_str(), claim["type"].as_str(), named["type"].as_str()),
        (Some("ADDED"), Some("ADDED"), Some("MODIFIED"))
    );
    let (claim, pod) = (&claim["object"], &named["object"]);
    assert!(
        rv(&added["object"]) < rv(claim) && rv(claim) < rv(pod),
        "pod, claim, then the pod's status"
    );
    let name = claim["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("trainer-accel-"), "{name}");
    assert_eq!(claim["metadata"]["labels"], json!({"team": "ml"}));
    assert_eq!(
        claim["metadata"]["annotations"],
        json!({"resource.kubernetes.io/pod-claim-name": "accel"})
    );
    assert_eq!(
        claim["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": pod["metadata"]["uid"], "controller": true}])
    );
    assert_eq!(
        pod["status"]["resourceClaimStatuses"],
        json!([{"name": "accel", "resourceClaimName": name}])
    );

    // Allocated and reserved as a scheduler does it: the finalizer, then the status.
    let path = format!("{CLAIMS}/{name}");
    let mut c = http(a, "GET", &path, None, None).await.json();
    c["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
    let mut c = send(a, "PUT", &path, &c).await;
    c["status"] = json!({"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}]});
    send(a, "PUT", &format!("{path}/status"), &c).await;
    for _ in 0..2 {
        assert_eq!(claims.next(SEC).await.unwrap()["type"], "MODIFIED");
    }

    let gone = http(a, "DELETE", "/api/v1/namespaces/shop/pods/trainer", None, None).await;
    assert_eq!(gone.status, 200);
    let released = claims.next(SEC).await.unwrap();
    assert_eq!(released["type"], "MODIFIED");
    assert!(released["object"]["status"].get("reservedFor").is_none(), "{released}");
    assert!(
        released["object"]["status"].get("allocation").is_none(),
        "deallocated: nobody is left"
    );
    let unprotected = claims.next(SEC).await.unwrap();
    assert_eq!(unprotected["type"], "MODIFIED");
    assert!(unprotected["object"]["metadata"].get("finalizers").is_none());
    let deleted = claims.next(SEC).await.unwrap();
    assert_eq!(
        (deleted["type"].as_str(), deleted["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some(name))
    );
    assert_eq!(http(a, "GET", &path, None, None).await.status, 404);
}

#[tokio::test]
async fn without_the_controller_no_claim_is_made() {
    let s = server_with(Config {
        resourceclaim_controller: false,
        ..Config::default()
    })
    .await;
    let a = s.addr();
    template_and_pod(a).await;
    let list = http(a, "GET", CLAIMS, None, None).await.json();
    assert_eq!(list["items"], json!([]));
    let pod = http(a, "GET", "/api/v1/namespaces/shop/pods/trainer", None, None)
        .await
        .json();
    assert!(pod["status"].get("resourceClaimStatuses").is_none());
}
