package wasmsched

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"
)

// State the host keeps for the plugin (since contract 0.7). A plugin's
// instances are pooled and may run concurrently, so Go variables are
// neither kept between calls nor shared: what must outlive a call (a
// quota's usage, a gang's members) goes here.

// StateStore is the type of Store.
type StateStore struct{}

// Store is the plugin's store: shared by every instance of the plugin (in
// every profile) and kept across calls and pods, as long as the scheduler
// runs. It is bounded (at most 65 536 keys of at most 1 KiB each, and keys
// and values together at most a quarter of the plugin's memory cap): a
// write past a bound is an error and changes nothing. A new version of the
// plugin starts with it empty unless it has a KeepState method returning
// true.
var Store StateStore

// Get is the value stored under key, and whether there is one.
func (StateStore) Get(key string) ([]byte, bool) {
	stateGet(stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptBytes()
}

// Set stores value under key.
func (StateStore) Set(key string, value []byte) error {
	stateSet(stringData(key), uint32(len(key)), bytesData(value), uint32(len(value)), retArea())
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return retUnit("state.set", key)
}

// Remove removes key, and says whether it was there.
func (StateStore) Remove(key string) bool {
	found := stateRemove(stringData(key), uint32(len(key))) != 0
	runtime.KeepAlive(key)
	return found
}

// Keys are the keys that start with prefix, sorted (at most 10 000).
func (StateStore) Keys(prefix string) []string {
	stateKeys(stringData(prefix), uint32(len(prefix)), retArea())
	runtime.KeepAlive(prefix)
	return retStrings()
}

// Add adds delta to the counter under key (an int64 stored as 8 bytes,
// little-endian; none counts as 0) and returns its new value, in one step
// however many instances call it at once. An error when the value there is
// not 8 bytes, or the sum overflows.
func (StateStore) Add(key string, delta int64) (int64, error) {
	stateAdd(stringData(key), uint32(len(key)), delta, retArea())
	runtime.KeepAlive(key)
	a := retArea()
	if u8At(a) != 0 {
		return 0, fmt.Errorf("state.add(%q): %s", key, stringAt(a+8))
	}
	return i64At(a + 8), nil
}

// Counter is the counter under key as Add keeps it: 0 when there is none,
// an error when the value there is not 8 bytes.
func (s StateStore) Counter(key string) (int64, error) {
	v, ok := s.Get(key)
	if !ok {
		return 0, nil
	}
	return counter(key, v)
}

// CycleState is the type of Cycle.
type CycleState struct{}

// Cycle is the state of the pod's attempt: what the plugin sets at
// PreFilter it gets at Filter, Score, Reserve, Permit, PreBind and PostBind
// (or Unreserve) of the same attempt; it is dropped when the attempt ends.
// At most 1 MiB per plugin and attempt.
var Cycle CycleState

// Get is the value the pod's cycle holds under key, and whether there is
// one.
func (CycleState) Get(key string) ([]byte, bool) {
	stateCycleGet(stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptBytes()
}

// Set stores value under key for the rest of the pod's cycle. An error
// outside a pod's cycle (in Configure, KeepState, EventsToRegister or
// MetricSources).
func (CycleState) Set(key string, value []byte) error {
	stateCycleSet(stringData(key), uint32(len(key)), bytesData(value), uint32(len(value)), retArea())
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return retUnit("state.cycle-set", key)
}

// Int64Bytes is v as a counter is stored: 8 bytes, little-endian.
func Int64Bytes(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// BytesInt64 reads a value of Int64Bytes (a counter); not ok when b is not
// 8 bytes.
func BytesInt64(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

func counter(key string, v []byte) (int64, error) {
	n, ok := BytesInt64(v)
	if !ok {
		return 0, fmt.Errorf("state: %q holds %d bytes, not a counter (8)", key, len(v))
	}
	return n, nil
}

// WaitingPod is a pod waiting at Permit: placed and holding its node's
// resources, not bound until every plugin that said Wait allows it.
type WaitingPod struct {
	Namespace string
	Name      string
	UID       string
	// Node is the node it is assumed on.
	Node   string
	Labels map[string]string
	// Plugins are the plugins it still waits for.
	Plugins []string
	// WaitedMs is how long it has waited, in milliseconds.
	WaitedMs uint64
}

// WaitingPods is the type of Waiting.
type WaitingPods struct{}

// Waiting are the pods waiting at Permit (since contract 0.7), of every
// profile.
var Waiting WaitingPods

// Pods are the pods waiting at Permit, longest waiting first.
func (WaitingPods) Pods() []WaitingPod {
	waitingPods(retArea())
	base, n := retList()
	return waitingPodsAt(base, n)
}

// Allow allows the pod of uid for this plugin: it stops waiting for this
// plugin (and is bound when no plugin is left). False when it does not
// wait for this plugin: a plugin releases only the pods it holds.
func (WaitingPods) Allow(uid string) bool {
	ok := waitingAllow(stringData(uid), uint32(len(uid))) != 0
	runtime.KeepAlive(uid)
	return ok
}

// Reject rejects the pod of uid, which this plugin holds, with reason: it
// is not bound, its Reserve is undone, and it is retried later. False when
// it does not wait for this plugin.
func (WaitingPods) Reject(uid, reason string) bool {
	ok := waitingReject(stringData(uid), uint32(len(uid)), stringData(reason), uint32(len(reason))) != 0
	runtime.KeepAlive(uid)
	runtime.KeepAlive(reason)
	return ok
}

// bytesData is the address of b's bytes, for a call that only reads them
// during the call (the caller keeps b alive).
func bytesData(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// retOptBytes reads an option<list<u8>> result: tag at 0, list at 4.
func retOptBytes() ([]byte, bool) {
	a := retArea()
	if u8At(a) == 0 {
		return nil, false
	}
	return bytesAt(a + 4), true
}

// retUnit reads a result<_, string>: tag at 0, the error message at 4.
func retUnit(fn, key string) error {
	a := retArea()
	if u8At(a) != 0 {
		return fmt.Errorf("%s(%q): %s", fn, key, stringAt(a+4))
	}
	return nil
}
