package store

import "testing"

func TestLibpqURL(t *testing.T) {
	for _, tc := range []struct {
		loc, conn, password string
	}{
		{"postgres://collab@db.example/collab", "postgres://collab@db.example/collab", ""},
		{"postgres://collab:s3cret@db.example:5433/collab?sslmode=require", "postgres://collab@db.example:5433/collab?sslmode=require", "s3cret"},
		{"postgres://postgres@/forge?host=%2Ftmp%2Fsock&default_query_exec_mode=cache_statement&lock_timeout=500",
			"postgres://postgres@/forge?host=%2Ftmp%2Fsock", ""},
		{"postgresql://u@h/d?application_name=x&statement_cache_capacity=8", "postgresql://u@h/d?application_name=x", ""},
	} {
		conn, password, err := libpqURL(tc.loc)
		if err != nil || conn != tc.conn || password != tc.password {
			t.Errorf("libpqURL(%q) = %q, %q, %v; want %q, %q", tc.loc, conn, password, err, tc.conn, tc.password)
		}
	}
	if _, _, err := libpqURL("/var/lib/collab/collab.db"); err == nil {
		t.Error("libpqURL of a file path: no error")
	}
}
