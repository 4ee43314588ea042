// The canonical-ABI glue between Go (GOOS=wasip1, GOARCH=wasm) and world
// `wasmsched:plugin/scheduler-plugin`. Users never see it: they call the
// methods of Pod and Nodes and implement the interfaces of plugin.go.
//
// Go's wasm port has 8-byte pointers and ints while the component ABI lays
// out 4-byte addresses, so records are read and written word by word at
// linear-memory addresses (uint32), never through Go struct overlays.

package wasmsched

import (
	"errors"
	"maps"
	"slices"
	"unsafe"
)

// addr is an address in linear memory.
type addr = uint32

func addrOf(p unsafe.Pointer) addr { return addr(uintptr(p)) }

// ptrAt turns a linear-memory address back into a pointer. go vet flags the
// conversion ("possible misuse of unsafe.Pointer"): here it is the point, as
// every address comes from the host or from addrOf of live memory.
func ptrAt(a addr) unsafe.Pointer { return unsafe.Pointer(uintptr(a)) }

func u8At(a addr) uint8       { return *(*uint8)(ptrAt(a)) }
func u32At(a addr) uint32     { return *(*uint32)(ptrAt(a)) }
func i64At(a addr) int64      { return *(*int64)(ptrAt(a)) }
func u64At(a addr) uint64     { return *(*uint64)(ptrAt(a)) }
func f64At(a addr) float64    { return *(*float64)(ptrAt(a)) }
func putU32(a addr, v uint32) { *(*uint32)(ptrAt(a)) = v }

// stringAt copies the string (ptr, len) stored at a out of the arena.
func stringAt(a addr) string {
	p, n := u32At(a), u32At(a+4)
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(ptrAt(p)), n))
}

// stringData is the address of s's bytes, for a call that only reads them
// during the call (the caller keeps s alive).
func stringData(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

// The arena that cabi_realloc hands out: everything the host copies into
// the guest during one export call (arguments, accessor results) lives here
// until the call returns, then the arena is reset. The Go heap cannot serve
// cabi_realloc directly: memory it returns is referenced by no Go pointer
// and a collection would free it under the host's feet.
var arena struct {
	chunk   []byte
	used    int
	retired [][]byte // outgrown chunks still referenced by this call
}

const arenaMin = 64 << 10

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if newSize == 0 {
		return align
	}
	if oldPtr != 0 && newSize <= oldSize {
		return oldPtr
	}
	base := addrOf(unsafe.Pointer(unsafe.SliceData(arena.chunk)))
	start := (int(base) + arena.used + int(align) - 1) &^ (int(align) - 1)
	off := start - int(base)
	if arena.chunk == nil || off+int(newSize) > len(arena.chunk) {
		size := max(2*len(arena.chunk), arenaMin)
		for size < int(newSize)+int(align) {
			size *= 2
		}
		if arena.chunk != nil {
			arena.retired = append(arena.retired, arena.chunk)
		}
		arena.chunk = make([]byte, size)
		base = addrOf(unsafe.Pointer(unsafe.SliceData(arena.chunk)))
		start = (int(base) + int(align) - 1) &^ (int(align) - 1)
		off = start - int(base)
	}
	arena.used = off + int(newSize)
	if oldPtr != 0 && oldSize > 0 {
		copy(arena.chunk[off:off+int(oldSize)], unsafe.Slice((*byte)(ptrAt(oldPtr)), oldSize))
	}
	return addr(start)
}

// resetArena ends an export call: the host has copied in everything it
// will, and nothing read from the arena is kept (accessors copy out).
func resetArena() {
	arena.used = 0
	if arena.retired != nil {
		clear(arena.retired)
		arena.retired = arena.retired[:0]
	}
}

// Arguments that imports read from memory (the pod views' selectors) are
// copied into the arena too: Go memory may move (goroutine stacks grow by
// copying) and a 4-byte address in a list would not follow it.

// alloc reserves n bytes aligned to align in the arena.
func alloc(align, n uint32) addr { return cabiRealloc(0, 0, align, n) }

// lowerString copies s into the arena: its address and length.
func lowerString(s string) (addr, uint32) {
	p := alloc(1, uint32(len(s)))
	copy(unsafe.Slice((*byte)(ptrAt(p)), len(s)), s)
	return p, uint32(len(s))
}

// putString copies s into the arena and writes its (ptr, len) at a.
func putString(a addr, s string) {
	p, n := lowerString(s)
	putU32(a, p)
	putU32(a+4, n)
}

// lowerStrings copies ss into the arena as a list<string>: its address.
func lowerStrings(ss []string) addr {
	base := alloc(4, 8*uint32(len(ss)))
	for i, s := range ss {
		putString(base+addr(i)*8, s)
	}
	return base
}

// ret is the return area of imports whose results do not fit in one value.
var ret [4]uint64

func retArea() addr { return addrOf(unsafe.Pointer(&ret)) }

// out is the return area of exports, read by the host after the export
// returns; keep holds what its pointers point at until the next call.
var (
	out  [12]uint32
	keep []any
)

func outArea() addr { return addrOf(unsafe.Pointer(&out)) }

// Imports of world `scheduler-plugin`. Pointers are uint32 addresses;
// Go memory passed in is kept alive by the caller for the call.

//go:wasmimport wasmsched:plugin/host@0.7.0 log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [resource-drop]pod
func dropPod(h int32)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [resource-drop]nodes
func dropNodes(h int32)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.name
func podName(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.namespace
func podNamespace(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.uid
func podUID(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.label
func podLabel(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.labels
func podLabels(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.annotation
func podAnnotation(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.annotations
func podAnnotations(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.request
func podRequest(h int32, name unsafe.Pointer, n uint32) int64

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.requests
func podRequests(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.tolerations
func podTolerations(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.images
func podImages(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.node-selector
func podNodeSelector(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.priority
func podPriority(h int32) int32

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.scheduler-name
func podSchedulerName(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.owner-kind
func podOwnerKind(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.json
func podJSON(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.len
func nodesLen(h int32) uint32

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.name
func nodesName(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.label
func nodesLabel(h int32, i uint32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.labels
func nodesLabels(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.annotation
func nodesAnnotation(h int32, i uint32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.annotations
func nodesAnnotations(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.allocatable
func nodesAllocatable(h int32, i uint32, name unsafe.Pointer, n uint32) int64

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.allocatables
func nodesAllocatables(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.requested
func nodesRequested(h int32, i uint32, name unsafe.Pointer, n uint32) int64

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.requesteds
func nodesRequesteds(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.pod-count
func nodesPodCount(h int32, i uint32) int64

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.unschedulable
func nodesUnschedulable(h int32, i uint32) int32

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.taints
func nodesTaints(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.conditions
func nodesConditions(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.image-size
func nodesImageSize(h int32, i uint32, name unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.images
func nodesImages(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.random
func nodesRandom(h int32, i uint32) int64

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.json
func nodesJSON(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.names
func nodesNames(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.label-values
func nodesLabelValues(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.annotation-values
func nodesAnnotationValues(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.label-numbers
func nodesLabelNumbers(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.annotation-numbers
func nodesAnnotationNumbers(h int32, key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.allocatable-all
func nodesAllocatableAll(h int32, name unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.requested-all
func nodesRequestedAll(h int32, name unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.image-bytes
func nodesImageBytes(h int32, names unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.randoms
func nodesRandoms(h int32, ret addr)

// The pod views take their pod-selector flat, as the seven values of
// lowerSelector: their flattened parameters number 8 (pod-counts,
// cluster-pod-count) and 10 (domain-counts, domains), within the 16 the
// canonical ABI passes flat.

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.pod-counts
func nodesPodCounts(h int32, ns addr, nsLen uint32, all uint32, labels addr, labelsLen uint32, exprs addr, exprsLen uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.domain-counts
func nodesDomainCounts(h int32, key addr, keyLen uint32, ns addr, nsLen uint32, all uint32, labels addr, labelsLen uint32, exprs addr, exprsLen uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.domains
func nodesDomains(h int32, key addr, keyLen uint32, ns addr, nsLen uint32, all uint32, labels addr, labelsLen uint32, exprs addr, exprsLen uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.cluster-pod-count
func nodesClusterPodCount(h int32, ns addr, nsLen uint32, all uint32, labels addr, labelsLen uint32, exprs addr, exprsLen uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.metrics
func nodesMetrics(h int32, source unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]pod.claims
func podClaims(h int32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.devices
func nodesDevices(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.allocation
func nodesAllocation(h int32, i uint32, ret addr)

//go:wasmimport wasmsched:plugin/cluster@0.7.0 [method]nodes.pods
func nodesPods(h int32, i uint32, ret addr)

// The plugin's store and the pod's cycle state (interface `state`, since
// contract 0.7). Keys and values are read by the host during the call.

//go:wasmimport wasmsched:plugin/state@0.7.0 get
func stateGet(key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/state@0.7.0 set
func stateSet(key unsafe.Pointer, n uint32, value unsafe.Pointer, vn uint32, ret addr)

//go:wasmimport wasmsched:plugin/state@0.7.0 remove
func stateRemove(key unsafe.Pointer, n uint32) int32

//go:wasmimport wasmsched:plugin/state@0.7.0 keys
func stateKeys(prefix unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/state@0.7.0 add
func stateAdd(key unsafe.Pointer, n uint32, delta int64, ret addr)

//go:wasmimport wasmsched:plugin/state@0.7.0 cycle-get
func stateCycleGet(key unsafe.Pointer, n uint32, ret addr)

//go:wasmimport wasmsched:plugin/state@0.7.0 cycle-set
func stateCycleSet(key unsafe.Pointer, n uint32, value unsafe.Pointer, vn uint32, ret addr)

// The pods waiting at Permit (interface `waiting`, since contract 0.7).

//go:wasmimport wasmsched:plugin/waiting@0.7.0 pods
func waitingPods(ret addr)

//go:wasmimport wasmsched:plugin/waiting@0.7.0 allow
func waitingAllow(uid unsafe.Pointer, n uint32) int32

//go:wasmimport wasmsched:plugin/waiting@0.7.0 reject
func waitingReject(uid unsafe.Pointer, n uint32, reason unsafe.Pointer, rn uint32) int32

// Readers of the return area, one per result shape of the contract.

// retString reads a string result.
func retString() string { return stringAt(retArea()) }

// retOptString reads an option<string> result: tag at 0, string at 4.
func retOptString() (string, bool) {
	a := retArea()
	if u8At(a) == 0 {
		return "", false
	}
	return stringAt(a + 4), true
}

// retList reads a list result: its base address and length.
func retList() (addr, int) {
	a := retArea()
	return u32At(a), int(u32At(a + 4))
}

// retPairs reads list<tuple<string, string>> into a map.
func retPairs() map[string]string { base, n := retList(); return pairsAt(base, n) }

// retStrings reads list<string>.
func retStrings() []string { base, n := retList(); return stringsAt(base, n) }

func stringsAt(base addr, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = stringAt(base + addr(i)*8)
	}
	return s
}

// retQuantities reads list<quantity>: {name: string @0, amount: s64 @8}.
func retQuantities() []Quantity { base, n := retList(); return quantitiesAt(base, n) }

// The records of devices (since contract 0.6), as the canonical ABI lays
// them out (strings and lists are (ptr, len) pairs, 8 bytes aligned to 4).

// attributeValueAt reads an attribute-value: the case's tag (u8) at 0, its
// payload at 8 (s64, bool or string; the variant is 8-aligned), 16 bytes.
func attributeValueAt(a addr) AttributeValue {
	v := AttributeValue{Kind: AttributeKind(u8At(a))}
	switch v.Kind {
	case AttributeInt:
		v.Int = i64At(a + 8)
	case AttributeBool:
		v.Bool = u8At(a+8) != 0
	case AttributeText:
		v.Text = stringAt(a + 8)
	case AttributeVersion:
		v.Version = stringAt(a + 8)
	}
	return v
}

// devicesAt reads list<device>: {driver @0, pool @8, name @16,
// attributes: list<device-attribute> @24, capacity: list<device-capacity>
// @32, taken: bool @40}, 44 bytes. A device-attribute is {name @0, value:
// attribute-value @8}, 24 bytes; a device-capacity {name @0, quantity @8,
// value: s64 @16}, 24 bytes.
func devicesAt(base addr, n int) []Device {
	d := make([]Device, n)
	for i := range d {
		e := base + addr(i)*44
		attrs, nAttrs := u32At(e+24), int(u32At(e+28))
		caps, nCaps := u32At(e+32), int(u32At(e+36))
		d[i] = Device{
			Driver:     stringAt(e),
			Pool:       stringAt(e + 8),
			Name:       stringAt(e + 16),
			Attributes: make([]DeviceAttribute, nAttrs),
			Capacity:   make([]DeviceCapacity, nCaps),
			Taken:      u8At(e+40) != 0,
		}
		for k := range d[i].Attributes {
			a := attrs + addr(k)*24
			d[i].Attributes[k] = DeviceAttribute{Name: stringAt(a), Value: attributeValueAt(a + 8)}
		}
		for k := range d[i].Capacity {
			c := caps + addr(k)*24
			d[i].Capacity[k] = DeviceCapacity{Name: stringAt(c), Quantity: stringAt(c + 8), Value: i64At(c + 16)}
		}
	}
	return d
}

// allocatedDevicesAt reads list<allocated-device>: {request @0, driver @8,
// pool @16, device @24}, 32 bytes.
func allocatedDevicesAt(base addr, n int) []AllocatedDevice {
	d := make([]AllocatedDevice, n)
	for i := range d {
		e := base + addr(i)*32
		d[i] = AllocatedDevice{Request: stringAt(e), Driver: stringAt(e + 8), Pool: stringAt(e + 16), Device: stringAt(e + 24)}
	}
	return d
}

// podClaimsAt reads list<pod-claim>: {name @0, claim: option<string> @8
// (tag at 0, string at 4), requests: list<claim-request> @20, allocated:
// list<allocated-device> @28, reserved-for: list<string> @36}, 44 bytes. A
// claim-request is {name @0, device-class @8, allocation-mode @16, count:
// u64 @24, selectors: list<string> @32, admin-access: bool @40}, 48 bytes
// (8-aligned).
func podClaimsAt(base addr, n int) []PodClaim {
	c := make([]PodClaim, n)
	for i := range c {
		e := base + addr(i)*44
		c[i] = PodClaim{
			Name:        stringAt(e),
			Requests:    make([]ClaimRequest, int(u32At(e+24))),
			Allocated:   allocatedDevicesAt(u32At(e+28), int(u32At(e+32))),
			ReservedFor: stringsAt(u32At(e+36), int(u32At(e+40))),
		}
		if u8At(e+8) != 0 {
			c[i].Claim = Option[string]{Ok: true, Value: stringAt(e + 12)}
		}
		reqs := u32At(e + 20)
		for k := range c[i].Requests {
			r := reqs + addr(k)*48
			c[i].Requests[k] = ClaimRequest{
				Name:           stringAt(r),
				DeviceClass:    stringAt(r + 8),
				AllocationMode: stringAt(r + 16),
				Count:          u64At(r + 24),
				Selectors:      stringsAt(u32At(r+32), int(u32At(r+36))),
				AdminAccess:    u8At(r+40) != 0,
			}
		}
	}
	return c
}

// The records of contract 0.7.

// pairsAt reads list<tuple<string, string>> at (base, n) into a map.
func pairsAt(base addr, n int) map[string]string {
	m := make(map[string]string, n)
	for i := 0; i < n; i++ {
		e := base + addr(i)*16
		m[stringAt(e)] = stringAt(e + 8)
	}
	return m
}

// quantitiesAt reads list<quantity> at (base, n).
func quantitiesAt(base addr, n int) []Quantity {
	q := make([]Quantity, n)
	for i := range q {
		e := base + addr(i)*16
		q[i] = Quantity{Name: stringAt(e), Amount: i64At(e + 8)}
	}
	return q
}

// placedPodsAt reads list<placed-pod>: {namespace @0, name @8, uid @16,
// priority: s32 @24, labels: list<tuple<string, string>> @28, requests:
// list<quantity> @36, deleting: bool @44}, 48 bytes.
func placedPodsAt(base addr, n int) []PlacedPod {
	p := make([]PlacedPod, n)
	for i := range p {
		e := base + addr(i)*48
		p[i] = PlacedPod{
			Namespace: stringAt(e),
			Name:      stringAt(e + 8),
			UID:       stringAt(e + 16),
			Priority:  int32(u32At(e + 24)),
			Labels:    pairsAt(u32At(e+28), int(u32At(e+32))),
			Requests:  quantitiesAt(u32At(e+36), int(u32At(e+40))),
			Deleting:  u8At(e+44) != 0,
		}
	}
	return p
}

// waitingPodsAt reads list<waiting-pod>: {namespace @0, name @8, uid @16,
// node @24, labels: list<tuple<string, string>> @32, plugins: list<string>
// @40, waited-ms: u64 @48}, 56 bytes (8-aligned).
func waitingPodsAt(base addr, n int) []WaitingPod {
	p := make([]WaitingPod, n)
	for i := range p {
		e := base + addr(i)*56
		p[i] = WaitingPod{
			Namespace: stringAt(e),
			Name:      stringAt(e + 8),
			UID:       stringAt(e + 16),
			Node:      stringAt(e + 24),
			Labels:    pairsAt(u32At(e+32), int(u32At(e+36))),
			Plugins:   stringsAt(u32At(e+40), int(u32At(e+44))),
			WaitedMs:  u64At(e + 48),
		}
	}
	return p
}

// bytesAt copies the list<u8> (ptr, len) stored at a out of the arena.
func bytesAt(a addr) []byte {
	p, n := u32At(a), u32At(a+4)
	b := make([]byte, n)
	if n > 0 {
		copy(b, unsafe.Slice((*byte)(ptrAt(p)), n))
	}
	return b
}

// retI64s reads list<s64> (and list<u64> as its bits).
func retI64s() []int64 {
	base, n := retList()
	v := make([]int64, n)
	if n > 0 {
		copy(v, unsafe.Slice((*int64)(ptrAt(base)), n))
	}
	return v
}

// retResult reads a result<list<T>, string>: tag at 0, then the list (base
// and length) at 4 or the error message at 4, prefixed with the function.
func retResult(fn string) (addr, int, error) {
	a := retArea()
	if u8At(a) != 0 {
		return 0, 0, errors.New(fn + ": " + stringAt(a+4))
	}
	return u32At(a + 4), int(u32At(a + 8)), nil
}

// flatSelector is a pod-selector as the seven values it flattens to; its
// lists are in the arena.
type flatSelector struct {
	ns, nsLen         uint32
	all               uint32
	labels, labelsLen uint32
	exprs, exprsLen   uint32
}

// lowerSelector copies s into the arena: match-labels as a
// list<tuple<string, string>> (16-byte elements, in key order, so that an
// invalid pair is reported the same every time), match-expressions as a
// list<label-requirement> ({key: string @0, operator: string @8, values:
// list<string> @16}, 24 bytes).
func lowerSelector(s PodSelector) flatSelector {
	f := flatSelector{
		ns:        lowerStrings(s.Namespaces),
		nsLen:     uint32(len(s.Namespaces)),
		labelsLen: uint32(len(s.MatchLabels)),
		exprsLen:  uint32(len(s.MatchExpressions)),
	}
	if s.AllNamespaces {
		f.all = 1
	}
	f.labels = alloc(4, 16*f.labelsLen)
	for i, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		e := f.labels + addr(i)*16
		putString(e, k)
		putString(e+8, s.MatchLabels[k])
	}
	f.exprs = alloc(4, 24*f.exprsLen)
	for i, r := range s.MatchExpressions {
		e := f.exprs + addr(i)*24
		putString(e, r.Key)
		putString(e+8, r.Operator)
		putU32(e+16, lowerStrings(r.Values))
		putU32(e+20, uint32(len(r.Values)))
	}
	return f
}
