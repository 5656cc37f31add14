package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestTimeEdges(t *testing.T) {
	in := time.Date(2026, 3, 1, 12, 0, 5, 123456789, time.FixedZone("x", 3600))
	at := At(in)
	const want = "2026-03-01T11:00:05.123Z"
	if at.String() != want || at.String() != FormatTime(in) {
		t.Fatalf("String = %q, want %q", at.String(), want)
	}
	b, err := json.Marshal(struct {
		A Time  `json:"a"`
		B *Time `json:"b"`
		C *Time `json:"c"`
	}{at, &at, nil})
	if err != nil || string(b) != `{"a":"`+want+`","b":"`+want+`","c":null}` {
		t.Fatalf("JSON = %s, %v", b, err)
	}
	var back Time
	if err := json.Unmarshal([]byte(`"`+want+`"`), &back); err != nil || back != at {
		t.Fatalf("unmarshal = %v, %v", back, err)
	}
	for _, src := range []any{want, []byte(want)} {
		var s Time
		if err := s.Scan(src); err != nil || s != at {
			t.Errorf("Scan(%T) = %v, %v", src, s, err)
		}
	}
	var bad Time
	if err := bad.Scan("x"); err == nil {
		t.Error("Scan of a malformed time succeeded")
	}
	if v, _ := at.Value(); v != want {
		t.Errorf("Value = %v", v)
	}
}

// TestTimeFastPaths: the digit-by-digit format and parse agree with the
// time package's own, for every kind of value.
func TestTimeFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC),
		time.Date(2026, 3, 1, 12, 0, 5, 123456789, time.FixedZone("x", -7*3600)),
		{},
	}
	for range 2000 {
		cases = append(cases, time.Unix(rng.Int64N(300_000_000_000)-62_000_000_000, rng.Int64N(1e9)))
	}
	for _, c := range cases {
		want := c.UTC().Format(TimeLayout)
		if got := FormatTime(c); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", c, got, want)
		}
		slow, err := time.Parse(time.RFC3339Nano, want)
		if err != nil {
			continue // a year time.Parse cannot read
		}
		got, err := ParseTime(want)
		if err != nil || !got.Equal(slow) || got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) = %v, %v; want %v", want, got, err, slow)
		}
	}
	for _, bad := range []string{"2026-02-30T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-01T00:00:00.00xZ", "x"} {
		if _, ok := parseLayout(bad); ok {
			t.Errorf("parseLayout(%q) took it", bad)
		}
	}
	// Other RFC 3339 forms still parse, through the slow path.
	if got, err := ParseTime("2026-03-01T13:00:05+01:00"); err != nil || FormatTime(got) != "2026-03-01T12:00:05.000Z" {
		t.Errorf("ParseTime of an offset time = %v, %v", got, err)
	}
}

// TestParseLayoutDays: every day text of 2000 to 2100 parses exactly when
// the time package reads it.
func TestParseLayoutDays(t *testing.T) {
	for y := 2000; y <= 2100; y++ {
		for m := 1; m <= 12; m++ {
			for d := 28; d <= 31; d++ {
				s := fmt.Sprintf("%04d-%02d-%02dT23:59:59.999Z", y, m, d)
				_, slowErr := time.Parse(time.RFC3339Nano, s)
				if _, ok := parseLayout(s); ok != (slowErr == nil) {
					t.Fatalf("parseLayout(%q) ok=%v, time.Parse err=%v", s, ok, slowErr)
				}
			}
		}
	}
}
