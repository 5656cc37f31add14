package ops_test

import (
	"os"
	"testing"

	"github.com/collab-forge/collab/internal/pgtest"
)

// TestMain runs the tests on PostgreSQL too when COLLAB_TEST_STORE=postgres.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
