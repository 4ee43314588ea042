package wasmsched

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unsafe"
)

// Quantity is one resource amount: millicores for `cpu`, bytes for
// memory-like resources, a count otherwise.
type Quantity struct {
	Name   string
	Amount int64
}

// Taint is a node taint. Value is empty when the taint has none.
type Taint struct {
	Key, Value string
	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	Effect string
}

// Toleration is a pod toleration.
type Toleration struct {
	// Key empty with Operator Exists tolerates every key.
	Key string
	// Operator is Equal or Exists.
	Operator string
	Value    string
	// Effect empty tolerates every effect.
	Effect string
}

// Condition is a node condition (type Ready, MemoryPressure, ...; status
// True, False or Unknown).
type Condition struct {
	Type, Status string
}

// Image is a container image a node holds, by all of its names.
type Image struct {
	Names     []string
	SizeBytes int64
}

// Option is a value that may be absent (a WIT option<T>): Value is the
// zero value when Ok is false.
type Option[T any] struct {
	Ok    bool
	Value T
}

// PodSelector chooses the pods a pod view counts: those of Namespaces whose
// labels have every MatchLabels pair and satisfy every MatchExpressions
// requirement (Kubernetes' label selector: both empty select every pod of
// those namespaces).
type PodSelector struct {
	// Namespaces whose pods count; empty: the namespace of the pod being
	// scheduled (as a pod affinity term without namespaces).
	Namespaces []string
	// AllNamespaces counts the pods of every namespace (Namespaces is then
	// ignored).
	AllNamespaces bool
	MatchLabels   map[string]string
	// MatchExpressions is Kubernetes' matchExpressions.
	MatchExpressions []LabelRequirement
}

// LabelRequirement is one requirement of a label selector.
type LabelRequirement struct {
	Key string
	// Operator is In, NotIn, Exists or DoesNotExist.
	Operator string
	// Values of In and NotIn (at least one); empty for Exists and
	// DoesNotExist.
	Values []string
}

// DomainCount is a topology domain (a value of the topology key) and the
// number of selected pods in it.
type DomainCount struct {
	Value string
	Count int
}

// Metric is one node's reading of a metric source (Nodes.Metrics), with
// what was placed on the node since: load the value cannot show yet.
type Metric struct {
	// Value is what the source's query gave for the node.
	Value float64
	// AgeMs is how old the value is, in milliseconds.
	AgeMs uint64
	// PodsSince is the number of pods bound or assumed on the node since
	// the value was taken. Correct the value by them, or every pod placed
	// between two refreshes goes to the same node.
	PodsSince uint32
	// CPUSince is the sum of those pods' CPU requests, in millicores.
	CPUSince int64
	// MemorySince is the sum of those pods' memory requests, in bytes.
	MemorySince int64
}

// AttributeKind says which value an AttributeValue holds (the cases of the
// contract's attribute-value).
type AttributeKind uint8

const (
	// AttributeInt: an integer, in AttributeValue.Int.
	AttributeInt AttributeKind = iota
	// AttributeBool: a boolean, in AttributeValue.Bool.
	AttributeBool
	// AttributeText: a string, in AttributeValue.Text.
	AttributeText
	// AttributeVersion: a semantic version as written (1.2.3), in
	// AttributeValue.Version.
	AttributeVersion
)

// String is the case's name in the contract (int, boolean, text, version).
func (k AttributeKind) String() string {
	switch k {
	case AttributeInt:
		return "int"
	case AttributeBool:
		return "boolean"
	case AttributeText:
		return "text"
	case AttributeVersion:
		return "version"
	}
	return fmt.Sprintf("AttributeKind(%d)", uint8(k))
}

// AttributeValue is the value of a device attribute
// (ResourceSlice.spec.devices[].attributes), a tagged union: Kind says
// which one field holds it; the others are zero.
type AttributeValue struct {
	Kind    AttributeKind
	Int     int64
	Bool    bool
	Text    string
	Version string
}

// String is the value as text: the number, true or false, the string or
// the version.
func (v AttributeValue) String() string {
	switch v.Kind {
	case AttributeInt:
		return strconv.FormatInt(v.Int, 10)
	case AttributeBool:
		return strconv.FormatBool(v.Bool)
	case AttributeText:
		return v.Text
	case AttributeVersion:
		return v.Version
	}
	return ""
}

// DeviceAttribute is one attribute of a device. Name is fully qualified,
// domain/name (a name a driver writes without a domain gets the driver's).
type DeviceAttribute struct {
	Name  string
	Value AttributeValue
}

// DeviceCapacity is one capacity of a device. Name is fully qualified, as
// attribute names.
type DeviceCapacity struct {
	Name string
	// Quantity is the quantity as written (80Gi).
	Quantity string
	// Value is the quantity rounded up to an integer (bytes for 80Gi).
	Value int64
}

// Device is a device a node can use (Nodes.Devices): published in a
// ResourceSlice for the node (nodeName), for a set of nodes that includes
// it (nodeSelector) or for every node (allNodes).
type Device struct {
	Driver string
	Pool   string
	// Name is spec.devices[].name, unique in its pool.
	Name       string
	Attributes []DeviceAttribute
	Capacity   []DeviceCapacity
	// Taken: allocated to a claim already (or to one whose pod is being
	// bound), so not available to this pod, unless it is one of this pod's
	// claims' devices.
	Taken bool
}

// Qualify is name as the host names a device's attributes and capacities:
// fully qualified. A name without a domain (memory) is the driver's
// (gpu.example.com/memory), as ResourceSlices and CEL's device.capacity
// read it; a qualified one is kept.
func (d Device) Qualify(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return d.Driver + "/" + name
}

// Attribute is the value of the attribute name (qualified, or the
// driver's when it has no domain: model is gpu.example.com/model on that
// driver's devices) and whether the device has it.
func (d Device) Attribute(name string) (AttributeValue, bool) {
	name = d.Qualify(name)
	for _, a := range d.Attributes {
		if a.Name == name {
			return a.Value, true
		}
	}
	return AttributeValue{}, false
}

// CapacityOf is the capacity name (qualified, or the driver's when it has
// no domain: memory is gpu.example.com/memory on that driver's devices)
// and whether the device publishes it: Value is the integer (bytes for
// 80Gi), Quantity the quantity as written.
func (d Device) CapacityOf(name string) (DeviceCapacity, bool) {
	name = d.Qualify(name)
	for _, c := range d.Capacity {
		if c.Name == name {
			return c, true
		}
	}
	return DeviceCapacity{}, false
}

// AllocatedDevice is a device chosen for a request of a claim.
type AllocatedDevice struct {
	// Request is the request's name; request/subrequest for a
	// firstAvailable request, naming the choice taken.
	Request string
	Driver  string
	Pool    string
	Device  string
}

// Is reports whether d is the device chosen (same driver, pool and name).
func (a AllocatedDevice) Is(d Device) bool {
	return a.Device == d.Name && a.Pool == d.Pool && a.Driver == d.Driver
}

// ClaimRequest is one request of a claim (spec.devices.requests[]); a
// firstAvailable request is listed once per subrequest, in order, named
// request/subrequest.
type ClaimRequest struct {
	Name        string
	DeviceClass string
	// AllocationMode is ExactCount or All.
	AllocationMode string
	// Count is how many devices (ExactCount).
	Count uint64
	// Selectors are the CEL selectors of the request (the class's are not
	// listed).
	Selectors   []string
	AdminAccess bool
}

// PodClaim is one of the pod's spec.resourceClaims, with the ResourceClaim
// it names (Pod.Claims).
type PodClaim struct {
	// Name is spec.resourceClaims[].name, as containers refer to it.
	Name string
	// Claim is the ResourceClaim's name; not Ok when it is not known yet
	// (made from a template, not created yet) or none is needed.
	Claim    Option[string]
	Requests []ClaimRequest
	// Allocated are the devices of a claim allocated already (empty
	// otherwise: see Nodes.Allocation for what this cycle chose).
	Allocated []AllocatedDevice
	// ReservedFor are the pods the claim is reserved for
	// (status.reservedFor), as namespace/name.
	ReservedFor []string
}

// PlacedPod is a pod bound or assumed on a node (Nodes.Pods, since
// contract 0.7).
type PlacedPod struct {
	Namespace string
	Name      string
	UID       string
	// Priority is spec.priority (0 when unset).
	Priority int32
	Labels   map[string]string
	// Requests are its effective requests (non-zero), as Pod.Requests.
	Requests []Quantity
	// Deleting: metadata.deletionTimestamp is set.
	Deleting bool
}

// Request is the pod's effective request of one resource (0 if none).
func (p PlacedPod) Request(name string) int64 {
	for _, q := range p.Requests {
		if q.Name == name {
			return q.Amount
		}
	}
	return 0
}

// Key is namespace/name, as PostFilterResult.Victims names a pod.
func (p PlacedPod) Key() string { return p.Namespace + "/" + p.Name }

// Pod is the pod being scheduled: a handle valid during the call that
// receives it. Every accessor asks the host and copies only what it returns.
type Pod struct{ h int32 }

// Name is metadata.name.
func (p Pod) Name() string { podName(p.h, retArea()); return retString() }

// Namespace is metadata.namespace.
func (p Pod) Namespace() string { podNamespace(p.h, retArea()); return retString() }

// UID is metadata.uid.
func (p Pod) UID() string { podUID(p.h, retArea()); return retString() }

// Label returns one label and whether it is set.
func (p Pod) Label(key string) (string, bool) {
	podLabel(p.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptString()
}

// Labels returns every label.
func (p Pod) Labels() map[string]string { podLabels(p.h, retArea()); return retPairs() }

// Annotation returns one annotation and whether it is set.
func (p Pod) Annotation(key string) (string, bool) {
	podAnnotation(p.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptString()
}

// Annotations returns every annotation.
func (p Pod) Annotations() map[string]string { podAnnotations(p.h, retArea()); return retPairs() }

// Request is the pod's effective request of one resource as kube-scheduler
// computes it (init containers, sidecars and overhead included); 0 if none.
func (p Pod) Request(name string) int64 {
	v := podRequest(p.h, stringData(name), uint32(len(name)))
	runtime.KeepAlive(name)
	return v
}

// Requests returns every non-zero effective request.
func (p Pod) Requests() []Quantity { podRequests(p.h, retArea()); return retQuantities() }

// Tolerations is spec.tolerations.
func (p Pod) Tolerations() []Toleration {
	podTolerations(p.h, retArea())
	base, n := retList()
	t := make([]Toleration, n)
	for i := range t {
		e := base + addr(i)*32
		t[i] = Toleration{Key: stringAt(e), Operator: stringAt(e + 8), Value: stringAt(e + 16), Effect: stringAt(e + 24)}
	}
	return t
}

// Images are the images of the pod's containers and init containers.
func (p Pod) Images() []string { podImages(p.h, retArea()); return retStrings() }

// NodeSelector is spec.nodeSelector.
func (p Pod) NodeSelector() map[string]string { podNodeSelector(p.h, retArea()); return retPairs() }

// Priority is spec.priority (0 when unset).
func (p Pod) Priority() int32 { return podPriority(p.h) }

// SchedulerName is spec.schedulerName.
func (p Pod) SchedulerName() string { podSchedulerName(p.h, retArea()); return retString() }

// OwnerKind is the kind of the controller owner (ReplicaSet, Job, ...), if any.
func (p Pod) OwnerKind() (string, bool) { podOwnerKind(p.h, retArea()); return retOptString() }

// JSON is the whole Pod object as Kubernetes JSON.
func (p Pod) JSON() string { podJSON(p.h, retArea()); return retString() }

// Claims are the pod's resource claims (Dynamic Resource Allocation, since
// contract 0.6), in spec.resourceClaims order.
func (p Pod) Claims() []PodClaim {
	podClaims(p.h, retArea())
	base, n := retList()
	return podClaimsAt(base, n)
}

// Nodes is a batch of candidate nodes, addressed by index 0 .. Len()-1
// (an index out of range traps), valid during the call that receives it.
// The column accessors (Names, LabelValues, AnnotationNumbers, ...) read
// one field of every node in a single host call: prefer them in loops.
type Nodes struct {
	h int32
	n int
}

func newNodes(h int32) Nodes { return Nodes{h: h, n: int(nodesLen(h))} }

// Len is the number of nodes in the batch.
func (ns Nodes) Len() int { return ns.n }

// Name is metadata.name of node i.
func (ns Nodes) Name(i int) string { nodesName(ns.h, uint32(i), retArea()); return retString() }

// Label returns one label of node i and whether it is set.
func (ns Nodes) Label(i int, key string) (string, bool) {
	nodesLabel(ns.h, uint32(i), stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptString()
}

// Labels returns every label of node i.
func (ns Nodes) Labels(i int) map[string]string {
	nodesLabels(ns.h, uint32(i), retArea())
	return retPairs()
}

// Annotation returns one annotation of node i and whether it is set.
func (ns Nodes) Annotation(i int, key string) (string, bool) {
	nodesAnnotation(ns.h, uint32(i), stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptString()
}

// Annotations returns every annotation of node i.
func (ns Nodes) Annotations(i int) map[string]string {
	nodesAnnotations(ns.h, uint32(i), retArea())
	return retPairs()
}

// Allocatable is node i's allocatable amount of one resource (0 if none).
func (ns Nodes) Allocatable(i int, name string) int64 {
	v := nodesAllocatable(ns.h, uint32(i), stringData(name), uint32(len(name)))
	runtime.KeepAlive(name)
	return v
}

// Allocatables returns every allocatable resource of node i.
func (ns Nodes) Allocatables(i int) []Quantity {
	nodesAllocatables(ns.h, uint32(i), retArea())
	return retQuantities()
}

// Requested is the sum of the requests of the pods on node i for one resource.
func (ns Nodes) Requested(i int, name string) int64 {
	v := nodesRequested(ns.h, uint32(i), stringData(name), uint32(len(name)))
	runtime.KeepAlive(name)
	return v
}

// Requesteds returns every non-zero requested resource of node i.
func (ns Nodes) Requesteds(i int) []Quantity {
	nodesRequesteds(ns.h, uint32(i), retArea())
	return retQuantities()
}

// PodCount is the number of pods on node i.
func (ns Nodes) PodCount(i int) int64 { return nodesPodCount(ns.h, uint32(i)) }

// Unschedulable is spec.unschedulable (cordoned) of node i.
func (ns Nodes) Unschedulable(i int) bool { return nodesUnschedulable(ns.h, uint32(i)) != 0 }

// Taints is spec.taints of node i.
func (ns Nodes) Taints(i int) []Taint {
	nodesTaints(ns.h, uint32(i), retArea())
	base, n := retList()
	t := make([]Taint, n)
	for k := range t {
		e := base + addr(k)*24
		t[k] = Taint{Key: stringAt(e), Value: stringAt(e + 8), Effect: stringAt(e + 16)}
	}
	return t
}

// Conditions is status.conditions of node i.
func (ns Nodes) Conditions(i int) []Condition {
	nodesConditions(ns.h, uint32(i), retArea())
	base, n := retList()
	c := make([]Condition, n)
	for k := range c {
		e := base + addr(k)*16
		c[k] = Condition{Type: stringAt(e), Status: stringAt(e + 8)}
	}
	return c
}

// ImageSize is the size in bytes of the image known by name on node i, if held.
func (ns Nodes) ImageSize(i int, name string) (int64, bool) {
	nodesImageSize(ns.h, uint32(i), stringData(name), uint32(len(name)), retArea())
	runtime.KeepAlive(name)
	a := retArea()
	if u8At(a) == 0 {
		return 0, false
	}
	return i64At(a + 8), true
}

// Images is status.images of node i.
func (ns Nodes) Images(i int) []Image {
	nodesImages(ns.h, uint32(i), retArea())
	base, n := retList()
	im := make([]Image, n)
	for k := range im {
		e := base + addr(k)*16
		im[k] = Image{Names: stringsAt(u32At(e), int(u32At(e+4))), SizeBytes: i64At(e + 8)}
	}
	return im
}

// Random is the host's seeded pseudo-random number for (pod, node i): the
// same seed gives the same numbers, so placements stay reproducible.
func (ns Nodes) Random(i int) uint64 { return uint64(nodesRandom(ns.h, uint32(i))) }

// JSON is the whole Node object i as Kubernetes JSON.
func (ns Nodes) JSON(i int) string { nodesJSON(ns.h, uint32(i), retArea()); return retString() }

// Names is metadata.name of every node.
func (ns Nodes) Names() []string { nodesNames(ns.h, retArea()); return retStrings() }

// LabelValues is one label of every node.
func (ns Nodes) LabelValues(key string) []Option[string] {
	nodesLabelValues(ns.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptStrings()
}

// AnnotationValues is one annotation of every node.
func (ns Nodes) AnnotationValues(key string) []Option[string] {
	nodesAnnotationValues(ns.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptStrings()
}

// LabelNumbers is one label of every node read as a decimal number; not Ok
// when absent or not a number.
func (ns Nodes) LabelNumbers(key string) []Option[float64] {
	nodesLabelNumbers(ns.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptF64s()
}

// AnnotationNumbers is one annotation of every node read as a decimal
// number; not Ok when absent or not a number.
func (ns Nodes) AnnotationNumbers(key string) []Option[float64] {
	nodesAnnotationNumbers(ns.h, stringData(key), uint32(len(key)), retArea())
	runtime.KeepAlive(key)
	return retOptF64s()
}

// AllocatableAll is the allocatable amount of one resource on every node.
func (ns Nodes) AllocatableAll(name string) []int64 {
	nodesAllocatableAll(ns.h, stringData(name), uint32(len(name)), retArea())
	runtime.KeepAlive(name)
	return retI64s()
}

// RequestedAll is the requested amount of one resource on every node.
func (ns Nodes) RequestedAll(name string) []int64 {
	nodesRequestedAll(ns.h, stringData(name), uint32(len(name)), retArea())
	runtime.KeepAlive(name)
	return retI64s()
}

// ImageBytes is the total size of the named images each node holds (an
// image counts once, by any of its names).
func (ns Nodes) ImageBytes(names []string) []int64 {
	list := make([]uint32, 2*len(names))
	for i, s := range names {
		list[2*i] = addrOf(stringData(s))
		list[2*i+1] = uint32(len(s))
	}
	nodesImageBytes(ns.h, unsafe.Pointer(unsafe.SliceData(list)), uint32(len(names)), retArea())
	runtime.KeepAlive(list)
	runtime.KeepAlive(names)
	return retI64s()
}

// Randoms is Random(i) for every node.
func (ns Nodes) Randoms() []uint64 {
	nodesRandoms(ns.h, retArea())
	v := retI64s()
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// The pod views count the pods bound or assumed on the cluster's nodes in
// this cycle (not those being deleted), as kube-scheduler's InterPodAffinity
// and PodTopologySpread count them. The host matches a selector once per
// group of pods with the same namespace and labels, so a call costs about as
// much as a column accessor. An invalid selector (an unknown operator, In
// without values, ...) is an error naming the field.

// PodCounts is, for every node, the number of pods on it that sel selects.
func (ns Nodes) PodCounts(sel PodSelector) ([]int, error) {
	f := lowerSelector(sel)
	nodesPodCounts(ns.h, f.ns, f.nsLen, f.all, f.labels, f.labelsLen, f.exprs, f.exprsLen, retArea())
	base, n, err := retResult("pod-counts")
	if err != nil {
		return nil, err
	}
	v := make([]int, n)
	for i := range v {
		v[i] = int(u32At(base + addr(i)*4))
	}
	return v, nil
}

// DomainCounts is, for every node, the number of pods that sel selects in
// its topology domain: on every node of the cluster whose label topologyKey
// has the same value as this node's. Not Ok when the node lacks the label.
func (ns Nodes) DomainCounts(topologyKey string, sel PodSelector) ([]Option[int], error) {
	f := lowerSelector(sel)
	kp, kn := lowerString(topologyKey)
	nodesDomainCounts(ns.h, kp, kn, f.ns, f.nsLen, f.all, f.labels, f.labelsLen, f.exprs, f.exprsLen, retArea())
	base, n, err := retResult("domain-counts")
	if err != nil {
		return nil, err
	}
	// option<u32>: 8-byte elements, tag at 0, value at 4.
	v := make([]Option[int], n)
	for i := range v {
		e := base + addr(i)*8
		if u8At(e) != 0 {
			v[i] = Option[int]{Ok: true, Value: int(u32At(e + 4))}
		}
	}
	return v, nil
}

// Domains is every domain of topologyKey in the cluster (each value the
// label takes on a node, not only on the batch's nodes) with the number of
// pods that sel selects in it, sorted by value. Domains without a selected
// pod are listed with 0, so the minimum over the list is the one a
// spreading rule compares against.
func (ns Nodes) Domains(topologyKey string, sel PodSelector) ([]DomainCount, error) {
	f := lowerSelector(sel)
	kp, kn := lowerString(topologyKey)
	nodesDomains(ns.h, kp, kn, f.ns, f.nsLen, f.all, f.labels, f.labelsLen, f.exprs, f.exprsLen, retArea())
	base, n, err := retResult("domains")
	if err != nil {
		return nil, err
	}
	// tuple<string, u32>: 12-byte elements, string at 0, count at 8.
	v := make([]DomainCount, n)
	for i := range v {
		e := base + addr(i)*12
		v[i] = DomainCount{Value: stringAt(e), Count: int(u32At(e + 8))}
	}
	return v, nil
}

// ClusterPodCount is the number of pods that sel selects in the whole
// cluster, on every node, not only the batch's (since 0.7): what a gang
// plugin counts of its gang at Permit, in one call whatever the cluster's
// size.
func (ns Nodes) ClusterPodCount(sel PodSelector) (int, error) {
	f := lowerSelector(sel)
	nodesClusterPodCount(ns.h, f.ns, f.nsLen, f.all, f.labels, f.labelsLen, f.exprs, f.exprsLen, retArea())
	a := retArea()
	if u8At(a) != 0 {
		return 0, fmt.Errorf("cluster-pod-count: %s", stringAt(a+4))
	}
	return int(u32At(a + 4)), nil
}

// Metrics is, for every node of the batch, the latest value of the metric
// source named source (metrics.sources[].name in the scheduler's
// configuration), refreshed in the background, never queried on the
// scheduling path. Not Ok when the source has no value for the node or its
// value is stale (the monitoring system is down, the node is new): fall
// back to a neutral answer then. An error, reading "metrics(<source>):
// <message>", when no source of that name is configured.
func (ns Nodes) Metrics(source string) ([]Option[Metric], error) {
	nodesMetrics(ns.h, stringData(source), uint32(len(source)), retArea())
	runtime.KeepAlive(source)
	base, n, err := retResult("metrics(" + source + ")")
	if err != nil {
		return nil, err
	}
	// option<metric>: 48-byte elements, tag at 0, the record at 8 (it is
	// 8-aligned): {value: f64 @0, age-ms: u64 @8, pods-since: u32 @16,
	// cpu-since: s64 @24, memory-since: s64 @32}.
	v := make([]Option[Metric], n)
	for i := range v {
		e := base + addr(i)*48
		if u8At(e) != 0 {
			m := e + 8
			v[i] = Option[Metric]{Ok: true, Value: Metric{
				Value:       f64At(m),
				AgeMs:       u64At(m + 8),
				PodsSince:   u32At(m + 16),
				CPUSince:    i64At(m + 24),
				MemorySince: i64At(m + 32),
			}}
		}
	}
	return v, nil
}

// Devices (since contract 0.6): Dynamic Resource Allocation's view of a
// node, from the cluster's ResourceSlices.

// Devices are the devices node i can use, by driver, pool and name (at
// most 4096).
func (ns Nodes) Devices(i int) []Device {
	nodesDevices(ns.h, uint32(i), retArea())
	base, n := retList()
	return devicesAt(base, n)
}

// Allocation is what DynamicResources allocated for the pod's unallocated
// claims on node i in this cycle: the devices, by claim in the pod's order.
// It is known at Filter (before this plugin's Filter when DynamicResources
// runs first, as by default) and at PreScore and Score for every feasible
// node. Not ok when the pod has no claim to allocate, or the node was not
// allocated for (yet).
func (ns Nodes) Allocation(i int) ([]AllocatedDevice, bool) {
	nodesAllocation(ns.h, uint32(i), retArea())
	// option<list<allocated-device>>: tag at 0, the list at 4.
	a := retArea()
	if u8At(a) == 0 {
		return nil, false
	}
	return allocatedDevicesAt(u32At(a+4), int(u32At(a+8))), true
}

// Pods are the pods bound or assumed on node i, in no particular order; at
// most 1000 (what a custom preemption picks its victims from). Since
// contract 0.7.
func (ns Nodes) Pods(i int) []PlacedPod {
	nodesPods(ns.h, uint32(i), retArea())
	base, n := retList()
	return placedPodsAt(base, n)
}

// AllocatedDevices are the devices DynamicResources allocated for the pod
// on node i in this cycle (Allocation), each with its attributes and
// capacity (from Devices), in allocation order; not ok when Allocation is
// not (the pod has no claim to allocate, or the node was not allocated
// for). Two host calls, the second only when something was allocated.
func (ns Nodes) AllocatedDevices(i int) ([]Device, bool) {
	chosen, ok := ns.Allocation(i)
	if !ok {
		return nil, false
	}
	if len(chosen) == 0 {
		return []Device{}, true
	}
	devices := ns.Devices(i)
	out := make([]Device, 0, len(chosen))
	for _, a := range chosen {
		for _, d := range devices {
			if a.Is(d) {
				out = append(out, d)
				break
			}
		}
	}
	return out, true
}

// retOptStrings reads list<option<string>>: 12-byte elements, tag at 0.
func retOptStrings() []Option[string] {
	base, n := retList()
	v := make([]Option[string], n)
	for i := range v {
		e := base + addr(i)*12
		if u8At(e) != 0 {
			v[i] = Option[string]{Value: stringAt(e + 4), Ok: true}
		}
	}
	return v
}

// retOptF64s reads list<option<f64>>: 16-byte elements, tag at 0, value
// at 8, which is Option[float64]'s layout (the tag byte is 0 or 1, as a Go
// bool): one copy, then the payloads of absent values, which the host
// leaves unwritten, are zeroed.
func retOptF64s() []Option[float64] {
	base, n := retList()
	v := make([]Option[float64], n)
	if n == 0 {
		return v
	}
	copy(v, unsafe.Slice((*Option[float64])(ptrAt(base)), n))
	for i := range v {
		if !v[i].Ok {
			v[i].Value = 0
		}
	}
	return v
}
