import { describe, expect, it } from 'vitest'
import { add, divide } from './calc'

describe('calc', () => {
  it('adds', () => {
    expect(add(2, 3)).toBe(5)
  })

  it('divides by zero', () => {
    expect(divide(1, 0)).toBe(Infinity)
  })
})
