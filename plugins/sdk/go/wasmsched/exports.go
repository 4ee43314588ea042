package wasmsched

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Level is a log level.
type Level int32

const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// Log writes a line to the scheduler's log, attributed to the plugin.
func Log(level Level, msg string) {
	hostLog(int32(level), stringData(msg), uint32(len(msg)))
}

// Debugf logs at debug level.
func Debugf(format string, args ...any) { Log(LevelDebug, fmt.Sprintf(format, args...)) }

// Infof logs at info level.
func Infof(format string, args ...any) { Log(LevelInfo, fmt.Sprintf(format, args...)) }

// Warnf logs at warn level.
func Warnf(format string, args ...any) { Log(LevelWarn, fmt.Sprintf(format, args...)) }

// Errorf logs at error level.
func Errorf(format string, args ...any) { Log(LevelError, fmt.Sprintf(format, args...)) }

var registered struct {
	name, version string
	plugin        Plugin
	// What is wrong with the plugin's methods (checkMethods): metadata logs
	// it and declares no point, so the host refuses the plugin at load.
	problems []string
}

// Register makes p the component's plugin, under the name the scheduler
// configuration enables it by. Call it once, from an init function.
func Register(name, version string, p Plugin) {
	if registered.plugin != nil {
		panic("wasmsched.Register: called twice (a component holds one plugin)")
	}
	registered.name, registered.version, registered.plugin = name, version, p
	registered.problems = checkMethods(p)
}

// The points flags of the contract, in declaration order.
const (
	pointPreFilter = 1 << iota
	pointFilter
	pointPreScore
	pointScore
	pointNormalizeScore
	pointPostFilter
	pointReserve
	pointPermit
	pointPreBind
	pointPostBind
)

func points(p Plugin) uint32 {
	var f uint32
	if _, ok := p.(PreFilterer); ok {
		f |= pointPreFilter
	}
	if _, ok := p.(Filterer); ok {
		f |= pointFilter
	}
	if _, ok := p.(PreScorer); ok {
		f |= pointPreScore
	}
	if _, ok := p.(Scorer); ok {
		f |= pointScore
	}
	if _, ok := p.(ScoreNormalizer); ok {
		f |= pointNormalizeScore
	}
	if _, ok := p.(PostFilterer); ok {
		f |= pointPostFilter
	}
	if _, ok := p.(Reserver); ok {
		f |= pointReserve
	}
	if _, ok := p.(Permitter); ok {
		f |= pointPermit
	}
	if _, ok := p.(PreBinder); ok {
		f |= pointPreBind
	}
	if _, ok := p.(PostBinder); ok {
		f |= pointPostBind
	}
	return f
}

// Results of exports go to out; strings and lists they point at stay in
// keep until the next call.

func hold(v any) { keep = append(keep, v) }

func strOut(a addr, s string) {
	hold(s)
	putU32(a, addrOf(stringData(s)))
	putU32(a+4, uint32(len(s)))
}

// errOut writes result::err(msg).
func errOut(err error) addr {
	a := outArea()
	putU32(a, 1)
	strOut(a+4, err.Error())
	return a
}

// call runs f, turning a panic into an error so that the host sees the
// contract's error result with the message rather than a trap.
func call(point string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", point, r)
		}
	}()
	if registered.plugin == nil {
		return errors.New("no plugin registered: call wasmsched.Register from an init function")
	}
	return f()
}

// begin starts an export call, end finishes it.
func begin() { clear(keep); keep = keep[:0] }
func end()   { resetArena() }

func notImplemented(point string) error {
	return fmt.Errorf("%s is not implemented by %s", point, registered.name)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#metadata
func exportMetadata() addr {
	begin()
	defer end()
	a := outArea()
	name := registered.name
	if registered.plugin == nil {
		name = ""
	}
	// plugin-metadata: {name: string @0, version: string @8, points: u16
	// @16, events: option<list<cluster-event>> @20, keep-state: bool @32},
	// 36 bytes.
	strOut(a, name)
	strOut(a+8, registered.version)
	pts := points(registered.plugin) // no plugin: no points
	if len(registered.problems) > 0 {
		for _, p := range registered.problems {
			Errorf("%s", p)
		}
		pts = 0
	}
	putU32(a+16, pts)
	eventsOut(a + 20)
	putU32(a+32, keepState())
	return a
}

// keepState is the plugin's keep-state: its KeepState, false without one.
func keepState() uint32 {
	p, ok := registered.plugin.(StateKeeper)
	if !ok {
		return 0
	}
	// metadata has no error result: a panic traps, logged first.
	defer func() {
		if r := recover(); r != nil {
			Errorf("keep-state: panic: %v", r)
			panic(r)
		}
	}()
	if p.KeepState() {
		return 1
	}
	return 0
}

// eventsOut writes the plugin's option<list<cluster-event>> at a: tag at 0,
// list at 4, of {resource: u8 @0, actions: u16 @2} (4 bytes). None (every
// change) when the plugin has no EventsToRegister.
func eventsOut(a addr) {
	p, ok := registered.plugin.(EnqueueExtensions)
	if !ok {
		putU32(a, 0)
		return
	}
	// metadata has no error result: a panic traps, logged first.
	defer func() {
		if r := recover(); r != nil {
			Errorf("events-to-register: panic: %v", r)
			panic(r)
		}
	}()
	events := p.EventsToRegister()
	words := make([]uint16, 2*len(events))
	for i, e := range events {
		words[2*i] = uint16(e.Resource)
		words[2*i+1] = uint16(e.Actions)
	}
	hold(words)
	putU32(a, 1)
	putU32(a+4, addrOf(unsafe.Pointer(unsafe.SliceData(words))))
	putU32(a+8, uint32(len(events)))
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#metric-sources
func exportMetricSources() addr {
	begin()
	defer end()
	a := outArea()
	// list<string>: (ptr, len) at a, of (ptr, len) pairs (8 bytes each).
	// Empty when the plugin has no MetricSources: it reads none.
	var sources []string
	if p, ok := registered.plugin.(MetricSourcer); ok {
		// metric-sources has no error result: a panic traps, logged first.
		defer func() {
			if r := recover(); r != nil {
				Errorf("metric-sources: panic: %v", r)
				panic(r)
			}
		}()
		sources = p.MetricSources()
	}
	hold(sources) // keeps every name alive
	words := make([]uint32, 2*len(sources))
	for i, s := range sources {
		words[2*i] = addrOf(stringData(s))
		words[2*i+1] = uint32(len(s))
	}
	hold(words)
	putU32(a, addrOf(unsafe.Pointer(unsafe.SliceData(words))))
	putU32(a+4, uint32(len(sources)))
	return a
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#configure
func exportConfigure(ptr addr, n uint32) addr {
	begin()
	defer end()
	raw := []byte(unsafe.String((*byte)(ptrAt(ptr)), n))
	err := call("configure", func() error {
		args := Args{raw: raw}
		if len(raw) == 0 {
			args.raw = []byte("{}")
		}
		if err := json.Unmarshal(args.raw, &args.fields); err != nil {
			return fmt.Errorf("args: not a JSON object: %v", err)
		}
		return registered.plugin.Configure(args)
	})
	if err != nil {
		return errOut(err)
	}
	putU32(outArea(), 0)
	return outArea()
}

func statusOut(s Status) addr {
	a := outArea()
	putU32(a, 0)
	putU32(a+4, uint32(s.Code))
	strOut(a+8, s.Reason)
	return a
}

// listOut writes result::ok(list) with the list at v (kept alive).
func listOut(ptr unsafe.Pointer, n int, v any) addr {
	hold(v)
	a := outArea()
	putU32(a, 0)
	putU32(a+4, addrOf(ptr))
	putU32(a+8, uint32(n))
	return a
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#pre-filter
func exportPreFilter(pod int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	var s Status
	err := call("pre-filter", func() (err error) {
		p, ok := registered.plugin.(PreFilterer)
		if !ok {
			return notImplemented("pre-filter")
		}
		s, err = p.PreFilter(Pod{pod})
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return statusOut(s)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#filter
func exportFilter(pod, nodes int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	var rs []Rejection
	err := call("filter", func() (err error) {
		p, ok := registered.plugin.(Filterer)
		if !ok {
			return notImplemented("filter")
		}
		rs, err = p.Filter(Pod{pod}, newNodes(nodes))
		return err
	})
	if err != nil {
		return errOut(err)
	}
	// rejection: {index: u32 @0, code: u8 @4, reason: string @8}
	hold(rs) // keeps every reason alive
	words := make([]uint32, 4*len(rs))
	for i, r := range rs {
		words[4*i] = uint32(r.Index)
		words[4*i+1] = uint32(r.Code)
		words[4*i+2] = addrOf(stringData(r.Reason))
		words[4*i+3] = uint32(len(r.Reason))
	}
	return listOut(unsafe.Pointer(unsafe.SliceData(words)), len(rs), words)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#pre-score
func exportPreScore(pod, nodes int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	var s Status
	err := call("pre-score", func() (err error) {
		p, ok := registered.plugin.(PreScorer)
		if !ok {
			return notImplemented("pre-score")
		}
		s, err = p.PreScore(Pod{pod}, newNodes(nodes))
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return statusOut(s)
}

// scoresOut writes result::ok(scores::values(list)): the result's tag at 0,
// the variant's at 4, the list at 8 (the payloads align to 4).
func scoresOut(scores []int64) addr {
	hold(scores)
	a := outArea()
	putU32(a, 0)
	putU32(a+4, 0)
	putU32(a+8, addrOf(unsafe.Pointer(unsafe.SliceData(scores))))
	putU32(a+12, uint32(len(scores)))
	return a
}

// scoresIn copies the scores variant the host passed (tag, ptr, len) out of
// the arena: values is n s64, packed n bytes, 8 per score, little-endian.
func scoresIn(tag uint32, ptr addr, n uint32) ([]int64, error) {
	switch tag {
	case 0:
		scores := make([]int64, n)
		if n > 0 {
			copy(scores, unsafe.Slice((*int64)(ptrAt(ptr)), n))
		}
		return scores, nil
	case 1:
		if n%8 != 0 {
			return nil, fmt.Errorf("normalize-score: packed scores of %d bytes, not a multiple of 8", n)
		}
		scores := make([]int64, n/8)
		if n > 0 {
			b := unsafe.Slice((*byte)(ptrAt(ptr)), n)
			for i := range scores {
				scores[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
			}
		}
		return scores, nil
	}
	return nil, fmt.Errorf("normalize-score: scores of unknown case %d", tag)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#score
func exportScore(pod, nodes int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	var scores []int64
	err := call("score", func() (err error) {
		p, ok := registered.plugin.(Scorer)
		if !ok {
			return notImplemented("score")
		}
		scores, err = p.Score(Pod{pod}, newNodes(nodes))
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return scoresOut(scores)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#normalize-score
func exportNormalizeScore(pod int32, tag uint32, ptr addr, n uint32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	scores, err := scoresIn(tag, ptr, n)
	if err != nil {
		return errOut(err)
	}
	err = call("normalize-score", func() (err error) {
		p, ok := registered.plugin.(ScoreNormalizer)
		if !ok {
			return notImplemented("normalize-score")
		}
		scores, err = p.NormalizeScore(Pod{pod}, scores)
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return scoresOut(scores)
}

// The points of contract 0.7. The world exports them all: one the plugin
// does not implement answers as if it were not there (the host calls only
// the points metadata lists).

// stringIn copies the string the host passed (ptr, n) out of the arena.
func stringIn(ptr addr, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(ptrAt(ptr)), n))
}

// quietly runs f, which has no error result (Unreserve, PostBind): a panic
// is logged instead of trapping.
func quietly(point string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			Errorf("%s: panic: %v", point, r)
		}
	}()
	if registered.plugin != nil {
		f()
	}
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#post-filter
func exportPostFilter(pod, nodes int32, ptr addr, n uint32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	// node-status: {node: string @0, code: u8 @8, reason: string @12,
	// plugin: string @20}, 28 bytes.
	statuses := make([]NodeStatus, n)
	for i := range statuses {
		e := ptr + addr(i)*28
		statuses[i] = NodeStatus{Node: stringAt(e), Code: Code(u8At(e + 8)), Reason: stringAt(e + 12), Plugin: stringAt(e + 20)}
	}
	r := PostFilterResult{Status: Status{Code: Unschedulable}}
	err := call("post-filter", func() (err error) {
		if p, ok := registered.plugin.(PostFilterer); ok {
			r, err = p.PostFilter(Pod{pod}, newNodes(nodes), statuses)
		}
		return err
	})
	if err != nil {
		return errOut(err)
	}
	// result::ok(post-filter-result) with the record at 4: status {code @4,
	// reason @8}, nominated-node: option<string> @16 (tag, then the string
	// at 20), victims: list<string> @28.
	a := outArea()
	putU32(a, 0)
	putU32(a+4, uint32(r.Status.Code))
	strOut(a+8, r.Status.Reason)
	if r.NominatedNode == "" {
		putU32(a+16, 0)
	} else {
		putU32(a+16, 1)
		strOut(a+20, r.NominatedNode)
	}
	hold(r.Victims) // keeps every name alive
	words := make([]uint32, 2*len(r.Victims))
	for i, v := range r.Victims {
		words[2*i] = addrOf(stringData(v))
		words[2*i+1] = uint32(len(v))
	}
	hold(words)
	putU32(a+28, addrOf(unsafe.Pointer(unsafe.SliceData(words))))
	putU32(a+32, uint32(len(r.Victims)))
	return a
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#reserve
func exportReserve(pod, nodes int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	s := Ok()
	err := call("reserve", func() (err error) {
		if p, ok := registered.plugin.(Reserver); ok {
			s, err = p.Reserve(Pod{pod}, newNodes(nodes))
		}
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return statusOut(s)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#unreserve
func exportUnreserve(pod int32, ptr addr, n uint32) {
	begin()
	defer end()
	defer dropPod(pod)
	node := stringIn(ptr, n)
	quietly("unreserve", func() {
		if p, ok := registered.plugin.(Reserver); ok {
			p.Unreserve(Pod{pod}, node)
		}
	})
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#permit
func exportPermit(pod, nodes int32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	defer dropNodes(nodes)
	v := Allow()
	err := call("permit", func() (err error) {
		if p, ok := registered.plugin.(Permitter); ok {
			v, err = p.Permit(Pod{pod}, newNodes(nodes))
		}
		return err
	})
	if err != nil {
		return errOut(err)
	}
	// result::ok(permit-verdict): the verdict's tag at 4 (allow, reject,
	// wait), its payload at 8 (the reason, or the milliseconds).
	a := outArea()
	putU32(a, 0)
	switch v.Kind {
	case PermitAllow:
		putU32(a+4, 0)
	case PermitReject:
		putU32(a+4, 1)
		strOut(a+8, v.Reason)
	case PermitWait:
		putU32(a+4, 2)
		putU32(a+8, waitMs(v.Timeout))
	default:
		return errOut(fmt.Errorf("permit: unknown verdict kind %d", v.Kind))
	}
	return a
}

// waitMs is a wait's timeout in milliseconds, rounded up (the host caps it
// at 15 minutes).
func waitMs(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(ms)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#pre-bind
func exportPreBind(pod int32, ptr addr, n uint32) addr {
	begin()
	defer end()
	defer dropPod(pod)
	node := stringIn(ptr, n)
	s := Ok()
	err := call("pre-bind", func() (err error) {
		if p, ok := registered.plugin.(PreBinder); ok {
			s, err = p.PreBind(Pod{pod}, node)
		}
		return err
	})
	if err != nil {
		return errOut(err)
	}
	return statusOut(s)
}

//go:wasmexport wasmsched:plugin/plugin@0.7.0#post-bind
func exportPostBind(pod int32, ptr addr, n uint32) {
	begin()
	defer end()
	defer dropPod(pod)
	node := stringIn(ptr, n)
	quietly("post-bind", func() {
		if p, ok := registered.plugin.(PostBinder); ok {
			p.PostBind(Pod{pod}, node)
		}
	})
}
