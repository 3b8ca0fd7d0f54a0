package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that travels in JSON as a Go duration string
// ("15s", "250ms"). Decoding rejects numbers and malformed strings with a
// message that says what was expected.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON decodes a duration string such as "15s". Its errors are
// *DurationError.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &DurationError{Value: string(b), msg: fmt.Sprintf("duration must be a string such as \"15s\" or \"250ms\", got %s", b)}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &DurationError{Value: string(b), msg: fmt.Sprintf("bad duration %q: use a number with a unit, such as \"15s\" or \"250ms\"", s)}
	}
	*d = Duration(v)
	return nil
}

// DurationError is a JSON value that is not a duration. encoding/json does
// not say which field an Unmarshaler failed on; Value, the raw JSON, lets
// the decoder find it.
type DurationError struct {
	Value string
	msg   string
}

func (e *DurationError) Error() string { return e.msg }
