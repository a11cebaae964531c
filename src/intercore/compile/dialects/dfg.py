"""The `dfg` dialect, on dfg-mlir's vocabulary (Feliix42/dfg-mlir): a Kahn process network.

- `!dfg.input<T>` is the end of a channel a producer pushes into, `!dfg.output<T>` the end a
  consumer pulls from; `dfg.channel` makes both, with a capacity in tokens.
- `dfg.process @p` is a node: the comp ops it runs (`ops`, their callees), its `rate` (firings
  per run, the product of the trip counts of the loops around it; `?` when a `while` decides),
  its `weight` (cost of all its firings) and `sensitivity` (predicted slowdown under
  interference), whether it is `stateful` or `replicable` (data-parallel), and how many
  instances run (`multiplicity`).
- `dfg.instantiate @p inputs(...) outputs(...)` places a process in a `dfg.graph`.

A channel carries one variable definition (`def`, the id of the comp op that defines it) to
one consumer. It is `conditional` when the definition and a use it reaches sit under
different `if` branches, and `control` when a loop or `if` condition reads it.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (ArrayAttr, FloatAttr, IntegerAttr, StringAttr,
                                   SymbolNameConstraint, SymbolRefAttr, UnitAttr)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict,
                       irdl_attr_definition, irdl_op_definition, opt_prop_def, prop_def,
                       region_def, result_def, traits_def, var_operand_def)
from xdsl.traits import NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException


@irdl_attr_definition
class InputType(ParametrizedAttribute, TypeAttribute):
    name = "dfg.input"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


@irdl_attr_definition
class OutputType(ParametrizedAttribute, TypeAttribute):
    name = "dfg.output"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


@irdl_op_definition
class ProcessOp(IRDLOperation):
    name = "dfg.process"

    sym_name = prop_def(SymbolNameConstraint())
    ops = prop_def(ArrayAttr[IntegerAttr])
    callees = prop_def(ArrayAttr[StringAttr])
    loop = prop_def(StringAttr)
    rate = prop_def(StringAttr)
    weight = prop_def(FloatAttr)
    sensitivity = prop_def(FloatAttr)
    multiplicity = prop_def(IntegerAttr)
    stateful = opt_prop_def(UnitAttr)
    replicable = opt_prop_def(UnitAttr)

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"

    def verify_(self) -> None:
        if self.multiplicity.value.data < 1:
            raise VerifyException("dfg.process: multiplicity must be >= 1")
        if self.multiplicity.value.data > 1 and self.stateful is not None:
            raise VerifyException(f"dfg.process {self.sym_name.data}: a stateful process "
                                  "cannot run as several instances")


@irdl_op_definition
class GraphOp(IRDLOperation):
    name = "dfg.graph"

    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict-with-keyword $body"


@irdl_op_definition
class ChannelOp(IRDLOperation):
    name = "dfg.channel"

    capacity = prop_def(IntegerAttr)
    var = prop_def(StringAttr)
    def_op = prop_def(IntegerAttr, prop_name="def")
    conditional = opt_prop_def(UnitAttr)
    control = opt_prop_def(UnitAttr)
    in_port = result_def(InputType)
    out_port = result_def(OutputType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($in_port) `,` type($out_port)"

    def verify_(self) -> None:
        if self.in_port.type.elem != self.out_port.type.elem:
            raise VerifyException("dfg.channel: both ends must carry the same type")
        if self.capacity.value.data < 1:
            raise VerifyException("dfg.channel: capacity must be >= 1")


@irdl_op_definition
class InstantiateOp(IRDLOperation):
    name = "dfg.instantiate"

    callee = prop_def(SymbolRefAttr)
    inputs = var_operand_def(OutputType)
    outputs = var_operand_def(InputType)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$callee `inputs` `(` $inputs `)` `outputs` `(` $outputs `)` attr-dict "
                       "`:` `(` type($inputs) `)` `->` `(` type($outputs) `)`")

    def __init__(self, callee: str, inputs, outputs):
        super().__init__(operands=[list(inputs), list(outputs)],
                         properties={"callee": SymbolRefAttr(callee)})


Dfg = Dialect("dfg", [ProcessOp, GraphOp, ChannelOp, InstantiateOp], [InputType, OutputType])

