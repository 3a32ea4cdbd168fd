/// Adds two numbers.
///
/// ```
/// assert_eq!(calc::add(2, 2), 4);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

pub fn divide(a: i32, b: i32) -> i32 {
    if b == 0 {
        panic!("division by zero");
    }
    a / b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }

    #[test]
    fn divides_by_zero() {
        assert_eq!(divide(1, 0), 0);
    }

    #[test]
    fn divides() {
        assert_eq!(divide(6, 3), 2);
    }
}
