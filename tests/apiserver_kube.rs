//! The API server double driven by kube-rs, the client the daemon uses:
//! lists, watchers (with their relist on 410), bindings, leases.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use support::{kube_client, server};

fn binding(pod: &str, node: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: Some(pod.into()),
            ..Default::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    }
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn list_get_and_selectors() {
    let s = server().await;
    let client = kube_client(&s);
    let nodes: Api<Node> = Api::all(client.clone());
    let all = nodes.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 3);
    assert!(all.metadata.resource_version.is_some());
    let b = nodes.list(&ListParams::default().labels("zone=b")).await.unwrap();
    assert_eq!(b.items.len(), 2);
    let pods: Api<Pod> = Api::all(client.clone());
    let pending = pods
        .list(&ListParams::default().fields("spec.nodeName=,spec.schedulerName=wasm-scheduler"))
        .await
        .unwrap();
    let names: Vec<_> = pending.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["web-1", "web-2"]);
    let shop: Api<Pod> = Api::namespaced(client, "shop");
    let db = shop.get("db-0").await.unwrap();
    assert_eq!(db.spec.unwrap().node_name.as_deref(), Some("n1"));
    let (code, reason, msg) = api_error(shop.get("nope").await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (404, "NotFound", "pods \"nope\" not found")
    );
    let paged = Api::<Pod>::all(kube_client(&s))
        .list(&ListParams::default().limit(2))
        .await
        .unwrap();
    assert_eq!(paged.items.len(), 2);
    assert!(paged.metadata.continue_.is_some());
}

#[tokio::test]
async fn bindings_through_the_subresource() {
    let s = server().await;
    let pods: Api<Pod> = Api::namespaced(kube_client(&s), "shop");
    let pp = PostParams::default();
    let status: Value = pods
        .create_subresource("binding", "web-1", &pp, &binding("web-1", "n2"))
        .await
        .unwrap();
    assert_eq!(
        (status["status"].as_str(), status["code"].as_u64()),
        (Some("Success"), Some(201))
    );
    let pod = pods.get("web-1").await.unwrap();
    assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("n2"));
    let scheduled = pod.status.unwrap().conditions.unwrap();
    assert!(
        scheduled
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );
    let err = pods
        .create_subresource::<_, Value>("binding", "web-1", &pp, &binding("web-1", "n1"))
        .await
        .unwrap_err();
    let (code, reason, msg) = api_error(err);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        msg,
        "Operation cannot be fulfilled on pods/binding \"web-1\": pod web-1 is already assigned to node \"n2\""
    );
    let err = pods
        .create_subresource::<_, Value>("binding", "ghost", &pp, &binding("ghost", "n1"))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 404);
}

#[tokio::test]
async fn lease_create_and_replace_with_conflicts() {
    let s = server().await;
    let leases: Api<Lease> = Api::namespaced(kube_client(&s), "kube-system");
    let pp = PostParams::default();
    let mut lease = Lease {
        metadata: ObjectMeta {
            name: Some("wasm-scheduler".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some("replica-a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    let created = leases.create(&pp, &lease).await.unwrap();
    let (code, reason, _) = api_error(leases.create(&pp, &lease).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    // replica b takes it with the current resourceVersion...
    let mut b = created.clone();
    b.spec.as_mut().unwrap().holder_identity = Some("replica-b".into());
    let taken = leases.replace("wasm-scheduler", &pp, &b).await.unwrap();
    assert_ne!(taken.metadata.resource_version, created.metadata.resource_version);
    // ...so replica a, renewing from its stale copy, conflicts
    let mut a = created;
    a.spec.as_mut().unwrap().renew_time = None;
    a.spec.as_mut().unwrap().lease_transitions = Some(1);
    let (code, reason, _) = api_error(leases.replace("wasm-scheduler", &pp, &a).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    lease.metadata = taken.metadata.clone();
    assert_eq!(
        leases
            .get("wasm-scheduler")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("replica-b")
    );
}

/// kube-rs' watcher lists, watches, and when its watch is dropped and its
/// resourceVersion compacted (410 Expired) relists; it ends up seeing every
/// binding made meanwhile.
#[tokio::test]
async fn watcher_relists_after_410() {
    let s = server().await;
    let pods: Api<Pod> = Api::all(kube_client(&s));
    let cfg = watcher::Config::default().timeout(5);
    let mut stream = watcher::watcher(pods, cfg).boxed();
    let mut inits = 0;
    let mut seen_bound = std::collections::BTreeSet::new();
    let step = Duration::from_secs(10);
    // initial list
    loop {
        match tokio::time::timeout(step, stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::Init => inits += 1,
            Event::InitDone => break,
            _ => {}
        }
    }
    let bind = |name: &str| {
        let body = format!(r#"{{"metadata":{{"name":"{name}"}},"target":{{"name":"n2"}}}}"#);
        let addr = s.addr();
        let path = format!("/api/v1/namespaces/shop/pods/{name}/binding");
        async move { support::http(addr, "POST", &path, None, Some(&body)).await.status }
    };
    assert_eq!(bind("web-1").await, 201);
    loop {
        if let Event::Apply(p) = tokio::time::timeout(step, stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            && p.spec.as_ref().unwrap().node_name.is_some()
        {
            seen_bound.insert(p.metadata.name.unwrap());
            break;
        }
    }
    // The watch is cut and its resourceVersion expires while a change lands.
    s.drop_watches();
    assert_eq!(bind("web-2").await, 201);
    s.compact();
    let expired_before = s.counters().watches_expired;
    let mut errors = Vec::new();
    loop {
        match tokio::time::timeout(step, stream.next()).await.unwrap().unwrap() {
            Ok(Event::Init) => inits += 1,
            Ok(Event::InitApply(p)) if p.spec.as_ref().unwrap().node_name.is_some() => {
                seen_bound.insert(p.metadata.name.unwrap());
            }
            Ok(Event::InitDone) => break,
            Ok(_) => {}
            // kube-rs yields the 410 as an error, then relists on the next poll
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("too old resource version"), "{errors:?}");
    assert_eq!(inits, 2, "one relist after the 410");
    assert!(
        s.counters().watches_expired > expired_before,
        "the resumed watch got 410"
    );
    assert!(
        seen_bound.contains("web-2"),
        "the relist brought the binding made while disconnected"
    );
}

/// Streaming lists (`sendInitialEvents`) as kube-rs requests them.
#[tokio::test]
async fn watcher_streaming_list() {
    let s = server().await;
    let nodes: Api<Node> = Api::all(kube_client(&s));
    let cfg = watcher::Config::default().streaming_lists();
    let mut stream = watcher::watcher(nodes, cfg).boxed();
    let mut names = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::InitApply(n) => names.push(n.metadata.name.unwrap()),
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(names, ["n1", "n2", "n3"]);
}

/// Delegated authentication and authorization as a component's secure port
/// does it with kube-rs: a ServiceAccount's token (the `token`
/// subresource), a TokenReview of it, RBAC applied as objects, and
/// SubjectAccessReviews of the reviewed user for `/metrics`.
#[tokio::test]
async fn tokens_reviews_and_rbac() {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec};
    use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};

    let s = server().await;
    let client = kube_client(&s);
    let pp = PostParams::default();
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "monitoring");
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some("prom".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let sa = sas.create(&pp, &sa).await.unwrap();
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(900),
            ..Default::default()
        }),
        ..Default::default()
    };
    let issued = sas.create_token_request("prom", &pp, &request).await.unwrap();
    assert_eq!(issued.spec.unwrap().expiration_seconds, Some(900));
    let token = issued.status.unwrap().token.unwrap();
    let err = sas.create_token_request("ghost", &pp, &request).await.unwrap_err();
    assert_eq!(api_error(err).0, 404);

    let reviews: Api<TokenReview> = Api::all(client.clone());
    let review = TokenReview {
        spec: TokenReviewSpec {
            token,
            ..Default::default()
        },
        ..Default::default()
    };
    let status = reviews.create(&pp, &review).await.unwrap().status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:serviceaccount:monitoring:prom"));
    assert_eq!(user.uid, sa.metadata.uid);

    let roles: Api<ClusterRole> = Api::all(client.clone());
    roles
        .create(
            &pp,
            &ClusterRole {
                metadata: ObjectMeta {
                    name: Some("metrics".into()),
                    ..Default::default()
                },
                rules: Some(vec![PolicyRule {
                    non_resource_urls: Some(vec!["/metrics".into()]),
                    verbs: vec!["get".into()],
                    ..Default::default()
                }]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    bindings
        .create(
            &pp,
            &ClusterRoleBinding {
                metadata: ObjectMeta {
                    name: Some("prom-metrics".into()),
                    ..Default::default()
                },
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name: "metrics".into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: "prom".into(),
                    namespace: Some("monitoring".into()),
                    ..Default::default()
                }]),
            },
        )
        .await
        .unwrap();
    let sars: Api<SubjectAccessReview> = Api::all(client);
    let ask = |path: &str| SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            groups: user.groups.clone(),
            uid: user.uid.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.into()),
                verb: Some("get".into()),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let allowed = sars.create(&pp, &ask("/metrics")).await.unwrap().status.unwrap();
    assert!(allowed.allowed);
    assert_eq!(
        allowed.reason.as_deref(),
        Some(
            "RBAC: allowed by ClusterRoleBinding \"prom-metrics\" of ClusterRole \"metrics\" to ServiceAccount \"prom/monitoring\""
        )
    );
    let denied = sars.create(&pp, &ask("/configz")).await.unwrap().status.unwrap();
    assert!(!denied.allowed);
    assert_eq!(denied.reason, None);
}
