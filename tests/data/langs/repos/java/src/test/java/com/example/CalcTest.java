package com.example;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class CalcTest {
    @Test
    public void adds() {
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    public void dividesByZero() {
        assertEquals(0, Calc.divide(1, 0));
    }

    @Test
    public void parses() {
        assertEquals(7, Calc.parse("seven"));
    }

    @Test
    public void divides() {
        assertEquals(2, Calc.divide(6, 3));
    }
}
