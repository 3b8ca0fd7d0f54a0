package fsm

import (
	"hash/maphash"
	"iter"
	"maps"
	"slices"
)

// cowShards is how many parts a cowMap spreads its keys over. A snapshot
// copies the table of parts; the first write to a part after it copies
// that part, so no write ever copies more than about 1/cowShards of a map.
const cowShards = 1024

var cowSeed = maphash.MakeSeed()

// cowMap is a map from string that can be frozen in time at a cost that
// does not grow with its size: freeze hands out the current parts to a
// read-only copy and marks them, and every value in them, shared. A write
// to a shared part first copies the part (its table only: the values stay
// shared), and a value that is to change in place (mut), when it is shared,
// is replaced first by its copy (clone, for values that are pointers or
// hold maps or slices the writer changes in place).
//
// Only the goroutine that changes the FSM writes a cowMap, and only values
// it got from mut; frozen copies are only read, by any goroutine. The
// order of keys is never seen: every listing sorts.
type cowMap[V any] struct {
	gen    uint64 // parts and values of an older generation are shared with a frozen copy
	n      int
	clone  func(V) V
	shards [cowShards]*cowShard[V]
}

type cowShard[V any] struct {
	gen uint64
	m   map[string]cowEntry[V]
}

type cowEntry[V any] struct {
	v   V
	gen uint64
}

func newCowMap[V any](clone func(V) V) *cowMap[V] {
	return &cowMap[V]{clone: clone}
}

func shardOf(k string) int { return int(maphash.String(cowSeed, k) % cowShards) }

func (c *cowMap[V]) get(k string) (V, bool) {
	if sh := c.shards[shardOf(k)]; sh != nil {
		e, ok := sh.m[k]
		return e.v, ok
	}
	var zero V
	return zero, false
}

func (c *cowMap[V]) has(k string) bool {
	_, ok := c.get(k)
	return ok
}

// mut returns the value of k for changing in place: copied first if a
// frozen copy shares it.
func (c *cowMap[V]) mut(k string) (V, bool) {
	if !c.has(k) {
		var zero V
		return zero, false
	}
	sh := c.own(shardOf(k))
	e := sh.m[k]
	if e.gen != c.gen && c.clone != nil {
		e = cowEntry[V]{c.clone(e.v), c.gen}
		sh.m[k] = e
	}
	return e.v, true
}

func (c *cowMap[V]) set(k string, v V) {
	sh := c.own(shardOf(k))
	if _, ok := sh.m[k]; !ok {
		c.n++
	}
	sh.m[k] = cowEntry[V]{v, c.gen}
}

func (c *cowMap[V]) del(k string) {
	if !c.has(k) {
		return
	}
	delete(c.own(shardOf(k)).m, k)
	c.n--
}

func (c *cowMap[V]) len() int { return c.n }

// own returns part i, its table copied first if a frozen copy shares it.
func (c *cowMap[V]) own(i int) *cowShard[V] {
	sh := c.shards[i]
	switch {
	case sh == nil:
		sh = &cowShard[V]{gen: c.gen, m: make(map[string]cowEntry[V])}
	case sh.gen != c.gen:
		sh = &cowShard[V]{gen: c.gen, m: maps.Clone(sh.m)}
	default:
		return sh
	}
	c.shards[i] = sh
	return sh
}

// freeze returns a read-only copy of c as it is now, and makes c copy each
// part before its next write to it.
func (c *cowMap[V]) freeze() *cowMap[V] {
	f := &cowMap[V]{gen: c.gen, n: c.n, shards: c.shards}
	c.gen++
	return f
}

// all yields every key and value, in no particular order.
func (c *cowMap[V]) all() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, sh := range c.shards {
			if sh == nil {
				continue
			}
			for k, e := range sh.m {
				if !yield(k, e.v) {
					return
				}
			}
		}
	}
}

// sortedKeys returns every key, sorted.
func (c *cowMap[V]) sortedKeys() []string {
	out := make([]string, 0, c.n)
	for k := range c.all() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sortedValues returns every value in key order.
func (c *cowMap[V]) sortedValues() []V {
	out := make([]V, 0, c.n)
	for _, k := range c.sortedKeys() {
		v, _ := c.get(k)
		out = append(out, v)
	}
	return out
}

// cloneLock is the deep copy a lock gets when its part of the map is
// copied: its own holders and queue, which the writer changes in place.
func cloneLock(l *Lock) *Lock {
	c := copyLock(l)
	return &c
}
