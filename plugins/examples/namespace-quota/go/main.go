// namespace-quota (Go): a per-namespace quota of one resource, counted by
// the scheduler (contract 0.7). Each namespace with a limit may have at
// most that much of the resource reserved by the pods this scheduler
// placed. The twin of ../rust/src/lib.rs.
//
// The usage lives in the host's store (wasmsched.Store), shared by every
// instance of the plugin and kept across pods (and across a new version:
// KeepState):
//
//   - used/NAMESPACE: the namespace's usage, a counter (Store.Add);
//   - pod/UID: what the pod of that UID took, 8 bytes little-endian, so
//     that Unreserve gives back exactly that.
//
// PreFilter rejects the pod (unschedulable) when its request would take the
// namespace past its limit. Reserve takes the request, in one step however
// many instances run at once, and gives it back at once when another pod
// took the room first. Unreserve gives back what the pod took.
//
// Args: {"resource": "cpu", "limits": {"NAMESPACE": AMOUNT}}, amounts in
// the contract's units (millicores for cpu, bytes for memory, a count
// otherwise). A namespace without a limit is not counted.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"
)

type namespaceQuota struct {
	resource string
	limits   map[string]int64
}

func usedKey(namespace string) string { return "used/" + namespace }
func podKey(uid string) string        { return "pod/" + uid }

func (q *namespaceQuota) Configure(args wasmsched.Args) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args.Raw(), &fields); err != nil {
		return fmt.Errorf("args must be a JSON object")
	}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		if key != "resource" && key != "limits" {
			return fmt.Errorf("unknown field %s", key)
		}
	}
	q.resource = "cpu"
	if raw, ok := fields["resource"]; ok {
		if err := json.Unmarshal(raw, &q.resource); err != nil || string(raw) == "null" {
			return fmt.Errorf("resource must be a string")
		}
	}
	q.limits = map[string]int64{}
	if raw, ok := fields["limits"]; ok {
		var limits map[string]json.RawMessage
		if err := json.Unmarshal(raw, &limits); err != nil || limits == nil {
			return fmt.Errorf("limits must be an object")
		}
		for _, ns := range slices.Sorted(maps.Keys(limits)) {
			n, ok := amount(limits[ns])
			if !ok {
				return fmt.Errorf("limits.%s must be a non-negative integer", ns)
			}
			q.limits[ns] = n
		}
	}
	return nil
}

// KeepState: the usage counts pods already placed, so a new version goes
// on from it.
func (q *namespaceQuota) KeepState() bool { return true }

// exceeded is why the pod does not fit, used being the namespace's usage
// without it.
func (q *namespaceQuota) exceeded(namespace string, used, req, limit int64) wasmsched.Status {
	return wasmsched.Status{
		Code: wasmsched.Unschedulable,
		Reason: fmt.Sprintf("namespace %s: %s quota exceeded (used %d + requested %d > limit %d)",
			namespace, q.resource, used, req, limit),
	}
}

// PreFilter rejects the pod while its namespace has no room for it.
func (q *namespaceQuota) PreFilter(pod wasmsched.Pod) (wasmsched.Status, error) {
	namespace := pod.Namespace()
	limit, ok := q.limits[namespace]
	if !ok {
		return wasmsched.Ok(), nil
	}
	req := pod.Request(q.resource)
	var used int64
	if v, ok := wasmsched.Store.Get(usedKey(namespace)); ok {
		used, _ = wasmsched.BytesInt64(v) // not a counter: 0
	}
	if saturatingAdd(used, req) > limit {
		return q.exceeded(namespace, used, req, limit), nil
	}
	return wasmsched.Ok(), nil
}

// Reserve takes the pod's request from its namespace's room, or fails when
// another pod took it since PreFilter.
func (q *namespaceQuota) Reserve(pod wasmsched.Pod, _ wasmsched.Nodes) (wasmsched.Status, error) {
	namespace := pod.Namespace()
	limit, ok := q.limits[namespace]
	if !ok {
		return wasmsched.Ok(), nil
	}
	req := pod.Request(q.resource)
	key := usedKey(namespace)
	now, err := wasmsched.Store.Add(key, req)
	if err != nil {
		return wasmsched.Status{}, err
	}
	if now > limit {
		if _, err := wasmsched.Store.Add(key, -req); err != nil {
			return wasmsched.Status{}, err
		}
		return q.exceeded(namespace, now-req, req, limit), nil
	}
	if err := wasmsched.Store.Set(podKey(pod.UID()), wasmsched.Int64Bytes(req)); err != nil {
		// Unreserve could not give it back: do not take it.
		if _, undo := wasmsched.Store.Add(key, -req); undo != nil {
			return wasmsched.Status{}, undo
		}
		return wasmsched.Status{}, err
	}
	return wasmsched.Ok(), nil
}

// Unreserve gives back what the pod took.
func (q *namespaceQuota) Unreserve(pod wasmsched.Pod, _ string) {
	key := podKey(pod.UID())
	taken, ok := wasmsched.Store.Get(key)
	if !ok {
		return
	}
	if amount, ok := wasmsched.BytesInt64(taken); ok {
		// Cannot fail: the counter holds at least the amount taken.
		wasmsched.Store.Add(usedKey(pod.Namespace()), -amount)
	}
	wasmsched.Store.Remove(key)
}

func saturatingAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// amount reads a limit: a JSON integer (digits only: no sign, fraction or
// exponent) that fits an int64.
func amount(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func init() { wasmsched.Register("namespace-quota", "1.0.0", &namespaceQuota{}) }

func main() {}
