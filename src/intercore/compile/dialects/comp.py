"""The `comp` dialect: a composition program after name resolution and inlining.

Variables live in `comp.var` slots (like MLIR's memref.alloca), so the imperative program
keeps its shape: control flow is structured (`comp.loop`, `comp.if`), scalar arithmetic uses
the `arith` dialect, and every call to a user function is one `comp.call`. A call's mutable
array parameters are what makes data flow between calls: a `const` parameter is only read,
a mutable one is read and redefined, so data parallelism is legal exactly where nothing that
crosses iterations is mutated. Every op that may become a dataflow node carries an `id`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (ArrayAttr, FloatAttr, FunctionType, IntAttr, IntegerAttr,
                                   StringAttr, SymbolNameConstraint, SymbolRefAttr, UnitAttr,
                                   i1)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict,
                       irdl_attr_definition, irdl_op_definition, operand_def, opt_operand_def,
                       opt_prop_def, prop_def, region_def, result_def, traits_def,
                       var_operand_def)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException


@irdl_attr_definition
class ArrayType(ParametrizedAttribute, TypeAttribute):
    """A fixed-size array token, `type block = float[256];`: `!comp.array<"block", f32, 256>`."""

    name = "comp.array"

    type_name: StringAttr
    elem: Attribute
    size: IntAttr

    def __init__(self, type_name: str, elem: Attribute, size: int):
        super().__init__(StringAttr(type_name), elem, IntAttr(size))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.type_name.data}, {self.size.data} x ")
        printer.print_attribute(self.elem)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        with parser.in_angle_brackets():
            name = parser.parse_identifier()
            parser.parse_punctuation(",")
            size = parser.parse_integer()
            parser.parse_shape_delimiter()
            elem = parser.parse_type()
        return (StringAttr(name), elem, IntAttr(size))


@irdl_attr_definition
class RefType(ParametrizedAttribute, TypeAttribute):
    """The slot of one variable: `!comp.ref<i32>`, `!comp.ref<!comp.array<...>>`."""

    name = "comp.ref"

    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


@irdl_op_definition
class DeclOp(IRDLOperation):
    """A function implemented in the user's C files. `mutates` lists the indices of its
    mutable array parameters; `stateful` says it keeps state between calls (never duplicated,
    never data-parallel), `states` which state objects that is (absent: any state);
    `weight` is the user's estimate of one call's cost."""

    name = "comp.decl"

    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    mutates = prop_def(ArrayAttr[IntegerAttr])
    stateful = opt_prop_def(UnitAttr)
    states = opt_prop_def(ArrayAttr[StringAttr])
    weight = opt_prop_def(FloatAttr)

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"


@irdl_op_definition
class FuncOp(IRDLOperation):
    """A composition function kept as a function: `main`, and recursive functions (which run
    as one sequential node). Array parameters arrive as refs, scalars as values; an array
    result is written through the last argument, a ref."""

    name = "comp.func"

    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict-with-keyword $body"


@irdl_op_definition
class VarOp(IRDLOperation):
    name = "comp.var"

    var_name = prop_def(StringAttr, prop_name="name")
    ref = result_def(RefType)

    assembly_format = "$name attr-dict `:` type($ref)"

    def __init__(self, name: str, elem: Attribute):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[RefType(elem)])


@irdl_op_definition
class LoadOp(IRDLOperation):
    name = "comp.load"

    ref = operand_def(RefType)
    value = result_def()

    assembly_format = "$ref attr-dict `:` type($ref) `->` type($value)"

    def __init__(self, ref):
        super().__init__(operands=[ref], result_types=[ref.type.elem])

    def verify_(self) -> None:
        if self.value.type != self.ref.type.elem:
            raise VerifyException("comp.load: result type is not the slot's type")


@irdl_op_definition
class StoreOp(IRDLOperation):
    name = "comp.store"

    value = operand_def()
    ref = operand_def(RefType)
    id = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$value `,` $ref attr-dict `:` type($value) `,` type($ref)"

    def __init__(self, value, ref, op_id: int):
        super().__init__(operands=[value, ref], properties={"id": IntegerAttr(op_id, 64)})

    def verify_(self) -> None:
        if self.value.type != self.ref.type.elem:
            raise VerifyException("comp.store: value type is not the slot's type")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Array assignment `dst = src;`."""

    name = "comp.copy"

    src = operand_def(RefType)
    dst = operand_def(RefType)
    id = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src, dst, op_id: int):
        super().__init__(operands=[src, dst], properties={"id": IntegerAttr(op_id, 64)})


@irdl_op_definition
class CallOp(IRDLOperation):
    """One call of a user function (or of a recursive composition function). Array arguments
    are refs, scalar ones values; the result, if any, is stored into `out`."""

    name = "comp.call"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    out = opt_operand_def(RefType)
    id = prop_def(IntegerAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict(),)
    assembly_format = ("$callee `(` $args `)` (`into` $out^)? attr-dict `:` "
                       "`(` type($args) `)` (`->` type($out)^)?")

    def __init__(self, callee: str, args, out, op_id: int):
        super().__init__(operands=[list(args), [out] if out is not None else []],
                         properties={"callee": SymbolRefAttr(callee), "id": IntegerAttr(op_id, 64)})


@irdl_op_definition
class LoopOp(IRDLOperation):
    """`for`/`while`: the `cond` region ends in comp.condition, `body` in comp.yield. A `for`
    over constant bounds records its trip count, which becomes the rate of the calls in it."""

    name = "comp.loop"

    kind = prop_def(StringAttr)
    trip = opt_prop_def(IntegerAttr)
    id = prop_def(IntegerAttr)
    cond = region_def("single_block")
    body = region_def("single_block")

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind attr-dict-with-keyword $cond `do` $body"


@irdl_op_definition
class IfOp(IRDLOperation):
    name = "comp.if"

    cond = operand_def(i1)
    id = prop_def(IntegerAttr)
    then = region_def("single_block")
    orelse = region_def("single_block")

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cond attr-dict-with-keyword $then `else` $orelse"


@irdl_op_definition
class ConditionOp(IRDLOperation):
    name = "comp.condition"

    cond = operand_def(i1)
    traits = traits_def(IsTerminator())
    assembly_format = "$cond attr-dict"


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "comp.yield"

    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "comp.return"

    value = opt_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($value^ `:` type($value))? attr-dict"


Comp = Dialect("comp", [DeclOp, FuncOp, VarOp, LoadOp, StoreOp, CopyOp, CallOp, LoopOp, IfOp,
                        ConditionOp, YieldOp, ReturnOp], [ArrayType, RefType])


