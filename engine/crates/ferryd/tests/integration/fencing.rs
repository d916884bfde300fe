//! Fencing tokens kept by a real node (`X-Ferry-Fence`): a change carrying a token lower than one the node has
//! seen in its scope is refused 409 `stale_fence` and changes nothing, across a restart too; other scopes, reads
//! and requests without the header are not affected.

use crate::common::NodeProc;
use serde_json::json;

const FENCE: &str = "X-Ferry-Fence";

fn read_only(node: &NodeProc, on: bool, fence: Option<&str>) -> (u16, serde_json::Value) {
    let headers: Vec<(&str, &str)> = fence.map(|f| vec![(FENCE, f)]).unwrap_or_default();
    node.post_with("/v1/read-only", json!({"read_only": on}), &headers)
}

#[test]
fn a_lower_token_is_refused_after_a_higher_one_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    assert_eq!(read_only(&node, true, Some("ferry/cp-1/cluster/3:7")).0, 200);
    assert_eq!(read_only(&node, true, Some("ferry/cp-1/cluster/3:7")).0, 200, "the same token again");
    let (code, body) = read_only(&node, false, Some("ferry/cp-1/cluster/3:6"));
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"]["code"], "stale_fence");
    assert!(body["error"]["message"].as_str().unwrap().contains("seen token 7"), "{body}");
    assert_eq!(node.status()["read_only"], true, "the stale change was not made");
    // Another scope's tokens do not compare with this one's.
    assert_eq!(read_only(&node, true, Some("ferry/cp-1/cluster/4:1")).0, 200);
    // Other fenced routes too.
    let (code, body) = node.post_with("/v1/binlog/flush", json!({}), &[(FENCE, "ferry/cp-1/cluster/3:2")]);
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("stale_fence")), "{body}");
}

#[test]
fn requests_without_the_header_and_reads_are_not_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    assert_eq!(read_only(&node, true, Some("ferry/cp-1/cluster/1:50")).0, 200);
    assert_eq!(read_only(&node, false, None).0, 200, "an operator's call without a token");
    assert_eq!(node.status()["read_only"], false);
    let wait = json!({"position": "", "timeout_ms": 0});
    assert_eq!(node.post_with("/v1/wait-for-position", wait, &[(FENCE, "ferry/cp-1/cluster/1:3")]).0, 200);
}

#[test]
fn the_highest_token_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    assert_eq!(read_only(&node, true, Some("ferry/cp-1/cluster/9:12")).0, 200);
    node.sigkill();
    node.restart();
    let (code, body) = read_only(&node, false, Some("ferry/cp-1/cluster/9:11"));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("stale_fence")), "{body}");
    assert_eq!(read_only(&node, false, Some("ferry/cp-1/cluster/9:13")).0, 200);
}

#[test]
fn a_malformed_header_is_refused_400_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    for bad in ["12", "cluster/1:", "cluster/1:x", "clu ster:1"] {
        let (code, body) = read_only(&node, true, Some(bad));
        assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_request")), "{bad}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("X-Ferry-Fence"), "{body}");
    }
    assert_eq!(node.status()["read_only"], false);
}

#[test]
fn raising_the_fence_records_the_token_and_changes_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let (code, body) = node.post_with("/v1/fence", json!({}), &[(FENCE, "ferry/cp-1/cluster/2:4")]);
    assert_eq!(code, 200, "{body}");
    assert_eq!((body["scope"].as_str(), body["token"].as_u64()), (Some("ferry/cp-1/cluster/2"), Some(4)));
    assert_eq!(node.status()["read_only"], false);
    let (code, body) = read_only(&node, true, Some("ferry/cp-1/cluster/2:3"));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("stale_fence")), "{body}");
    let (code, body) = node.post_with("/v1/fence", json!({}), &[(FENCE, "ferry/cp-1/cluster/2:3")]);
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("stale_fence")), "{body}");
    let (code, body) = node.post_with("/v1/fence", json!({}), &[]);
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_request")), "{body}");
}
