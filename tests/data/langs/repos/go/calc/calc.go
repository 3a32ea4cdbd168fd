package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}

// At returns the i-th item.
func At(items []int, i int) int {
	return items[i]
}
