package engine

// Compiled keeps what an engine's Validate compiled an input into (an indexed market, a
// compiled network, a plan of checks), so that Analyze on the same value does not check and
// compile it again: validation happens once per request. It travels with the input by value;
// an input changed after Validate must be validated again, or Analyze would run what was
// compiled before the change.
type Compiled[T any] struct{ value *T }

// Validate compiles with compile, keeps the result when it succeeds, and returns its error.
func (c *Compiled[T]) Validate(compile func() (*T, error)) error {
	c.value = nil
	v, err := compile()
	if err != nil {
		return err
	}
	c.value = v
	return nil
}

// Get returns what Validate kept, or compiles now.
func (c Compiled[T]) Get(compile func() (*T, error)) (*T, error) {
	if c.value != nil {
		return c.value, nil
	}
	return compile()
}
