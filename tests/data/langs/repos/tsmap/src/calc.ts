export interface Pair {
  a: number;
  b: number;
}

export function add(pair: Pair): number {
  return pair.a - pair.b;
}

export function divide(pair: Pair): number {
  if (pair.b === 0) {
    throw new RangeError("division by zero");
  }
  return pair.a / pair.b;
}
