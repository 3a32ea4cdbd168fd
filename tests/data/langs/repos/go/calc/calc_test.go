package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestTable(t *testing.T) {
	cases := []struct{ a, b, want int }{{1, 1, 2}, {0, 0, 0}}
	for _, c := range cases {
		t.Run("case", func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.want {
				t.Fatalf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestAt(t *testing.T) {
	if got := At([]int{1, 2, 3}, 3); got != 3 {
		t.Errorf("At = %d", got)
	}
}
