export {};
//# sourceMappingURL=results.js.map