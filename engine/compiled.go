package engine

// Compiled keeps what an engine's Validate compiled an input into (an indexed market, a
// compiled network, a plan of checks), so that Analyze on the same value does not check and
// compile it again: validation happens once per request. It travels with the input by value,
// with a key of what it was compiled from — the input's members, and its slices by identity
// (SliceOf) — and Get compiles again when the key differs: an input whose members were set,
// or whose slices were replaced, grown or cut after Validate is checked again. What it does
// not see is an element of a slice edited in place after Validate; validate again after that.
// The compiled value may be shared by copies analysed at once, so Analyze must treat it as
// read-only.
type Compiled[K comparable, T any] struct {
	key   K
	value *T
}

// Validate compiles with compile, keeps the result with key when it succeeds, and returns
// its error.
func (c *Compiled[K, T]) Validate(key K, compile func() (*T, error)) error {
	c.value = nil
	v, err := compile()
	if err != nil {
		return err
	}
	c.key, c.value = key, v
	return nil
}

// Get returns what Validate kept for key, or compiles now.
func (c Compiled[K, T]) Get(key K, compile func() (*T, error)) (*T, error) {
	if c.value != nil && c.key == key {
		return c.value, nil
	}
	return compile()
}

// Slice identifies a slice by the address of its first element and its length.
type Slice[E any] struct {
	first *E
	n     int
}

// SliceOf is the identity of s, for the key of a Compiled.
func SliceOf[E any](s []E) Slice[E] {
	if len(s) == 0 {
		return Slice[E]{}
	}
	return Slice[E]{&s[0], len(s)}
}

// Optional is the value an optional member points to, for the key of a Compiled.
type Optional[V comparable] struct {
	value V
	set   bool
}

// ValueOf is what p points to: a member set to a new pointer with the same value keeps its
// key, one set to another value does not.
func ValueOf[V comparable](p *V) Optional[V] {
	if p == nil {
		return Optional[V]{}
	}
	return Optional[V]{*p, true}
}
