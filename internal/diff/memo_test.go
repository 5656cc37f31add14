package diff

import (
	"context"
	"os"
	"reflect"
	"testing"
)

// Through a Memo diffs read as without it, and read again they start no
// git (PATH is emptied); a nil Memo reads git.
func TestMemo(t *testing.T) {
	r, rev := threeRevisions(t)
	ctx := context.Background()
	m := NewMemo(1 << 20)
	tests := []struct {
		name string
		read func(*Memo) (Result, error)
		want func() (Result, error)
	}{
		{"revision",
			func(m *Memo) (Result, error) { return m.Revision(ctx, r.gitDir(), rev[3], Limits{}) },
			func() (Result, error) { return Revision(ctx, r.gitDir(), rev[3], Limits{}) }},
		{"interdiff",
			func(m *Memo) (Result, error) { return m.Interdiff(ctx, r.gitDir(), rev[1], rev[3], Limits{}) },
			func() (Result, error) { return Interdiff(ctx, r.gitDir(), rev[1], rev[3], Limits{}) }},
		{"other limits",
			func(m *Memo) (Result, error) { return m.Revision(ctx, r.gitDir(), rev[3], Limits{MaxBytes: 10}) },
			func() (Result, error) { return Revision(ctx, r.gitDir(), rev[3], Limits{MaxBytes: 10}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := tt.want()
			if err != nil {
				t.Fatal(err)
			}
			for _, mm := range []*Memo{nil, m} {
				if got, err := tt.read(mm); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("memo %v: %+v, %v; want %+v", mm != nil, got, err, want)
				}
			}
			path := os.Getenv("PATH")
			t.Setenv("PATH", "")
			got, err := tt.read(m)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("read again: %+v, %v; want %+v", got, err, want)
			}
			got.Notes = append(got.Notes, "mine")
			if again, _ := tt.read(m); !reflect.DeepEqual(again, want) {
				t.Fatalf("an append to a remembered diff changed it: %+v", again)
			}
			t.Setenv("PATH", path)
		})
	}
}
