package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class CalcJupiterTest {
    @Test
    void adds() {
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    void dividesByZero() {
        assertEquals(0, Calc.divide(1, 0));
    }

    @Nested
    class Parsing {
        @Test
        void parses() {
            assertEquals(7, Calc.parse("seven"));
        }
    }
}
