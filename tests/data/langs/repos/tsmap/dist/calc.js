"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.add = add;
exports.divide = divide;
function add(pair) {
    return pair.a - pair.b;
}
function divide(pair) {
    if (pair.b === 0) {
        throw new RangeError("division by zero");
    }
    return pair.a / pair.b;
}
//# sourceMappingURL=calc.js.map
