package history

// KVKind is what an operation of the namespace workload does to a group
// of registers.
type KVKind string

// Operation kinds of the namespace workload.
const (
	// KVGet reads one register (a default read: under the master lease).
	KVGet KVKind = "get"
	// KVPut writes one register.
	KVPut KVKind = "put"
	// KVCAS writes one register if its modify index is CAS (0: only if
	// it does not exist).
	KVCAS KVKind = "cas"
	// KVTxn compares register 0's value with Expect; if equal it writes
	// Value to register 0 and Value2 to register 1, else it reads both.
	KVTxn KVKind = "txn"
	// KVDelete deletes one register.
	KVDelete KVKind = "delete"
	// KVRepeat sends an earlier put of the same session again with its
	// request number, after a later write of the register: lockd must
	// refuse it as a repeat and change nothing.
	KVRepeat KVKind = "repeat"
)

// KVRegisters is how many registers a group has.
const KVRegisters = 2

// KVOp is one operation of the namespace workload on a group of
// registers (keys Group+"/0" and Group+"/1"), with what it saw.
type KVOp struct {
	ID     int64
	Client int
	Group  string
	Kind   KVKind
	// Key is the register a get, put, cas, delete or repeat names.
	Key int
	// Value is what a put, cas or repeat writes, or what a txn writes to
	// register 0; Value2 is what a txn writes to register 1. Every value
	// the workload writes is unique.
	Value  string `json:",omitempty"`
	Value2 string `json:",omitempty"`
	// Expect is the value a txn compares register 0 with.
	Expect string `json:",omitempty"`
	// CAS is a cas's expected modify index (0: the key must not exist).
	CAS uint64 `json:",omitempty"`
	// Seen is what a get read of its register, or what a txn that took
	// its failure branch read of both (indexed by register).
	Seen []KVSeen `json:",omitempty"`
	// Index is a write's index (its modify index), when acknowledged.
	Index uint64 `json:",omitempty"`
	// Succeeded is a txn's branch.
	Succeeded bool `json:",omitempty"`
	// Deleted is how many keys a delete reported deleting.
	Deleted int `json:",omitempty"`
	Code    string
	Status  Status
	Call    int64
	Return  int64
	Err     string `json:",omitempty"`
}

// KVSeen is what a read saw of one register.
type KVSeen struct {
	Exists bool
	Value  string `json:",omitempty"`
	// ModifyIndex is the key's modify index (when it exists).
	ModifyIndex uint64 `json:",omitempty"`
}

// AddKV records a namespace operation; Invoke/Complete-style stamping is
// the caller's (KVInvoke, KVComplete).
func (r *Recorder) AddKV(op KVOp) {
	if op.ID == 0 {
		op.ID = r.nextID.Add(1)
	}
	r.mu.Lock()
	r.kv = append(r.kv, op)
	r.mu.Unlock()
}

// KVInvoke stamps op's invocation.
func (r *Recorder) KVInvoke(op KVOp) KVOp {
	op.ID = r.nextID.Add(1)
	op.Call = r.Now()
	return op
}

// KVComplete stamps op's completion with st and records it; an Unknown
// op gets Return Infinity.
func (r *Recorder) KVComplete(op KVOp, st Status) {
	op.Status = st
	if st == Unknown {
		op.Return = Infinity
	} else {
		op.Return = r.Now()
	}
	r.AddKV(op)
}

// KVOps returns the recorded namespace operations ordered by invocation.
func (r *Recorder) KVOps() []KVOp {
	r.mu.Lock()
	out := append([]KVOp(nil), r.kv...)
	r.mu.Unlock()
	sortByCall(out, func(o KVOp) int64 { return o.Call })
	return out
}
