// Package wasmsched writes wasmsched scheduling plugins in Go.
//
// A plugin is a type with a Configure method plus any of PreFilter, Filter,
// PostFilter, PreScore, Score, NormalizeScore, Reserve (with Unreserve),
// Permit, PreBind and PostBind, registered from an init function:
//
//	type lowestPrice struct{ key string }
//
//	func (p *lowestPrice) Configure(args wasmsched.Args) (err error) {
//		p.key, err = args.String("annotation", "price")
//		return err
//	}
//
//	func (p *lowestPrice) Score(pod wasmsched.Pod, nodes wasmsched.Nodes) ([]int64, error) {
//		...
//	}
//
//	func init() { wasmsched.Register("lowest-price", "0.1.0", &lowestPrice{}) }
//
//	func main() {}
//
// The points the plugin implements are the methods it has; an
// EventsToRegister method lists the cluster changes that may make a pod it
// rejected fit; a MetricSources method names the metric sources it reads;
// a KeepState method keeps its store when a new version replaces it.
// A returned error, or a panic, becomes the contract's error result: the
// host applies the plugin's failure policy and logs the message.
//
// A plugin's instances are pooled and may run concurrently, so what must
// outlive a call (a quota's usage, a gang's members) lives in the host:
// Store is the plugin's store, shared by its instances and kept across
// pods; Cycle is the pod's cycle state, from PreFilter to PostBind;
// Waiting lists the pods waiting at Permit and releases those the plugin
// holds.
//
// Build with plugins/build.sh go DIR (standard Go, GOOS=wasip1,
// -buildmode=c-shared): the component imports only the plugin world.
package wasmsched

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Plugin is what every plugin implements: Configure receives the args from
// the scheduler configuration (pluginConfig[].args); an error rejects this
// version of the plugin with that message.
type Plugin interface {
	Configure(args Args) error
}

// PreFilterer runs once per pod per cycle: Unschedulable rejects the pod on
// every node; Skip skips Filter for this pod.
type PreFilterer interface {
	PreFilter(pod Pod) (Status, error)
}

// Filterer returns the nodes of the batch that do not fit (the others
// pass), by index.
type Filterer interface {
	Filter(pod Pod, nodes Nodes) ([]Rejection, error)
}

// PreScorer runs once per pod with the feasible nodes; Skip skips Score.
type PreScorer interface {
	PreScore(pod Pod, nodes Nodes) (Status, error)
}

// Scorer returns one raw score per node of the batch, in order: 0..100
// unless the plugin is also a ScoreNormalizer.
type Scorer interface {
	Score(pod Pod, nodes Nodes) ([]int64, error)
}

// ScoreNormalizer maps the raw scores of every feasible node (in node
// order) into 0..100, returning as many scores.
type ScoreNormalizer interface {
	NormalizeScore(pod Pod, scores []int64) ([]int64, error)
}

// PostFilterer runs when the pod fits on no node (since contract 0.7),
// after the PostFilter plugins the profile lists before it
// (DefaultPreemption by default) and only if none of them succeeded.
// statuses says why Filter rejected each node (at most 1000, the first
// ones); nodes holds those nodes in the same order. A Success status means
// the plugin made room (the PostFilter plugins after it do not run);
// otherwise its reason joins the pod's failure message.
type PostFilterer interface {
	PostFilter(pod Pod, nodes Nodes, statuses []NodeStatus) (PostFilterResult, error)
}

// Reserver holds what the plugin counts for a pod placed on a node (since
// contract 0.7). Reserve runs on the node chosen (nodes holds that one
// node) before Permit; a status other than Success, or an error, fails the
// attempt and undoes the Reserve of every plugin that reserved, in reverse
// order. Unreserve undoes this plugin's Reserve for the pod on node (a
// later point failed, Permit rejected or timed out, the binding failed, or
// the pod was deleted while waiting): it is called at most once per
// Reserve and cannot fail (a panic is logged).
type Reserver interface {
	Reserve(pod Pod, nodes Nodes) (Status, error)
	Unreserve(pod Pod, node string)
}

// Permitter says, after Reserve, whether the pod may be bound (since
// contract 0.7): Allow(), Deny(reason) (its Reserve is undone and it is
// retried later) or Wait(timeout) (held, with its node's resources, until
// the plugin allows or rejects it through Waiting, or the timeout passes).
// nodes holds the one node chosen.
type Permitter interface {
	Permit(pod Pod, nodes Nodes) (PermitVerdict, error)
}

// PreBinder runs in the binding cycle, after Permit allowed the pod and
// before the binding is written (since contract 0.7). A status other than
// Success, an error, or no answer within the plugin's time limit fails the
// binding: the pod is unreserved and retried.
type PreBinder interface {
	PreBind(pod Pod, node string) (Status, error)
}

// PostBinder learns that the pod is bound to node (since contract 0.7;
// informational: a panic is logged).
type PostBinder interface {
	PostBind(pod Pod, node string)
}

// EnqueueExtensions lists the cluster changes after which a pod the plugin
// rejected may fit (kube-scheduler's EventsToRegister). Such a pod waits,
// unschedulable, until one of them happens (or five minutes pass), so a
// narrow list spares the scheduler retries that cannot succeed. A plugin
// without the method registers for every change; an empty list registers
// for none. It is called before Configure, so it cannot depend on the args.
type EnqueueExtensions interface {
	EventsToRegister() []ClusterEvent
}

// MetricSourcer names the metric sources (metrics.sources[].name of the
// scheduler configuration) the plugin reads with Nodes.Metrics. It is
// called once, after Configure, so it may depend on the args; the host
// checks the names at load and refuses the plugin on one the configuration
// does not define, rather than failing every pod. A plugin without the
// method reads none.
type MetricSourcer interface {
	MetricSources() []string
}

// StateKeeper keeps the plugin's store (Store) when this version replaces
// another of the same name (since contract 0.7); without the method, or
// when it returns false, a new version starts with an empty store. It is
// called before Configure, so it cannot depend on the args.
type StateKeeper interface {
	KeepState() bool
}

// ClusterEvent is a kind of cluster change (kube-scheduler's ClusterEvent).
type ClusterEvent struct {
	Resource EventResource
	Actions  EventActions
}

// EventResource is what kind of object changed (kube-scheduler's
// EventResource).
type EventResource uint8

const (
	// ResourceNode: a node.
	ResourceNode EventResource = iota
	// ResourcePod: a pod bound or assumed on a node; a registration also
	// covers the updates of the pending pod itself.
	ResourcePod
	// ResourceNamespace: a namespace (its labels, which namespace selectors
	// read).
	ResourceNamespace
	// ResourceClaim: a ResourceClaim; a deallocation frees devices (since
	// contract 0.6).
	ResourceClaim
	// ResourceSlice: a ResourceSlice; devices published or changed (since
	// contract 0.6).
	ResourceSlice
	// ResourceDeviceClass: a DeviceClass (since contract 0.6).
	ResourceDeviceClass
)

// EventActions is how it changed, a set of flags (kube-scheduler's
// ActionType): combine them with |.
type EventActions uint16

const (
	// ActionAdd: a node created, a pod bound or assumed, a namespace created.
	ActionAdd EventActions = 1 << iota
	// ActionDelete: deleted (or a pod no longer using its node).
	ActionDelete
	// ActionUpdate: any update, the finer kinds below included (a namespace
	// has only this one).
	ActionUpdate
	// ActionUpdateNodeAllocatable: a node's allocatable changed.
	ActionUpdateNodeAllocatable
	// ActionUpdateNodeLabel: a node's labels changed.
	ActionUpdateNodeLabel
	// ActionUpdateNodeTaint: a node's taints changed, or it became
	// schedulable.
	ActionUpdateNodeTaint
	// ActionUpdateNodeCondition: a node's condition statuses changed.
	ActionUpdateNodeCondition
	// ActionUpdateNodeAnnotation: a node's annotations changed.
	ActionUpdateNodeAnnotation
	// ActionUpdatePodLabel: a pod's labels changed.
	ActionUpdatePodLabel
	// ActionUpdatePodScaleDown: a pod requests less than before.
	ActionUpdatePodScaleDown
	// ActionUpdatePodToleration: a pod's tolerations changed.
	ActionUpdatePodToleration
)

// Code is a verdict, with kube-scheduler's status codes.
type Code uint8

const (
	// Success: go on.
	Success Code = iota
	// Unschedulable: the node does not fit now.
	Unschedulable
	// UnschedulableAndUnresolvable: the node will not fit whatever happens
	// to other pods.
	UnschedulableAndUnresolvable
	// Skip: (PreFilter, PreScore) nothing to do for this pod.
	Skip
)

// Status is a verdict with the reason shown to users.
type Status struct {
	Code   Code
	Reason string
}

// Rejection is a node Filter rejected: its index in the batch and why.
type Rejection struct {
	Index  int
	Code   Code
	Reason string
}

// NodeStatus is what Filter found on one node, for PostFilter.
type NodeStatus struct {
	Node string
	// Code is Unschedulable or UnschedulableAndUnresolvable.
	Code   Code
	Reason string
	// Plugin is the plugin that rejected the node.
	Plugin string
}

// PostFilterResult is what PostFilter answers.
type PostFilterResult struct {
	// Status Success: the plugin made room, and the PostFilter plugins
	// after it do not run; otherwise its reason joins the pod's failure
	// message.
	Status Status
	// NominatedNode is the node the pod is nominated to (empty: none): the
	// scheduler holds its room there for the pod
	// (status.nominatedNodeName).
	NominatedNode string
	// Victims are the pods to evict from the nominated node to make that
	// room, as namespace/name (PlacedPod.Key). The host evicts them as
	// preemption does, and only if every one is bound to that node, of
	// lower priority than the pod, not being deleted already, and not
	// protected by a PodDisruptionBudget that allows no disruption;
	// otherwise it evicts none and the pod's attempt fails with the reason.
	Victims []string
}

// PermitKind says which verdict a PermitVerdict is.
type PermitKind uint8

const (
	// PermitAllow: bind (once every other Permit plugin allows too).
	PermitAllow PermitKind = iota
	// PermitReject: do not bind; the pod's Reserve is undone and it is
	// retried later.
	PermitReject
	// PermitWait: hold the pod, with its node's resources, until the plugin
	// allows or rejects it through Waiting, or Timeout passes (then it is
	// rejected).
	PermitWait
)

// PermitVerdict is Permit's answer: Allow(), Deny(reason) or
// Wait(timeout).
type PermitVerdict struct {
	Kind PermitKind
	// Reason of PermitReject.
	Reason string
	// Timeout of PermitWait, in whole milliseconds (rounded up; at most 15
	// minutes).
	Timeout time.Duration
}

// Allow lets the pod be bound (once every other Permit plugin allows too).
func Allow() PermitVerdict { return PermitVerdict{Kind: PermitAllow} }

// Deny keeps the pod from being bound, with reason: its Reserve is undone
// and it is retried later.
func Deny(reason string) PermitVerdict { return PermitVerdict{Kind: PermitReject, Reason: reason} }

// Wait holds the pod, with its node's resources, for at most timeout (at
// most 15 minutes): until the plugin (this instance or another, on another
// pod's call) allows it with Waiting.Allow or rejects it with
// Waiting.Reject; at the deadline it is rejected. The scheduler goes on
// with other pods meanwhile.
func Wait(timeout time.Duration) PermitVerdict {
	return PermitVerdict{Kind: PermitWait, Timeout: timeout}
}

// Ok is the Success status.
func Ok() Status { return Status{Code: Success} }

// Skipped is the Skip status.
func Skipped() Status { return Status{Code: Skip} }

// Reject rejects node i: it does not fit now.
func Reject(i int, reason string) Rejection {
	return Rejection{Index: i, Code: Unschedulable, Reason: reason}
}

// RejectUnresolvable rejects node i for good.
func RejectUnresolvable(i int, reason string) Rejection {
	return Rejection{Index: i, Code: UnschedulableAndUnresolvable, Reason: reason}
}

// Args are the plugin's args, a JSON object ({} when none).
type Args struct {
	raw    []byte
	fields map[string]json.RawMessage
}

// Raw is the args' JSON text.
func (a Args) Raw() []byte { return a.raw }

// Decode decodes the args into v (a pointer to a struct with json tags);
// a field v does not have is an error that names it.
func (a Args) Decode(v any) error {
	d := json.NewDecoder(bytes.NewReader(a.raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	return nil
}

// String is the string arg key, or def when absent; an error names the key
// when it is not a string.
func (a Args) String(key, def string) (string, error) {
	var s string
	return s, field(a, key, &s, def, "a string")
}

// Number is the number arg key, or def when absent.
func (a Args) Number(key string, def float64) (float64, error) {
	var f float64
	return f, field(a, key, &f, def, "a number")
}

// Bool is the boolean arg key, or def when absent.
func (a Args) Bool(key string, def bool) (bool, error) {
	var b bool
	return b, field(a, key, &b, def, "true or false")
}

func field[T any](a Args, key string, dst *T, def T, want string) error {
	raw, ok := a.fields[key]
	if !ok || string(raw) == "null" {
		*dst = def
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("args.%s: must be %s", key, want)
	}
	return nil
}
