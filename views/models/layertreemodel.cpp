#include "layertreemodel.h"

#include "core/formats/expertnames.h"

#include <QHash>

#include <functional>

namespace fp8scope {

namespace {

// The tree's path to a layer: its dotted parts; an expert's, its GEMM's parts and then "expert I", so that the
// experts of one GEMM are its children whatever the writer's naming (TE's gemm_I, Megatron's local_experts.I).
QStringList pathOf(const QString &layer)
{
    if (const auto e = expertOf(layer))
        return e->gemm.split(QLatin1Char('.'), Qt::SkipEmptyParts) << expertLabel(e->expert);
    return layer.split(QLatin1Char('.'), Qt::SkipEmptyParts);
}

} // namespace

struct LayerTreeModel::Node {
    QString name;
    QString path;
    QString layer;
    QString tensor;
    int experts = 0; // a GEMM's node: its experts
    Node *parent = nullptr;
    int row = 0;
    std::vector<std::unique_ptr<Node>> children;
    QHash<QString, Node *> byName;

    Node *child(const QString &childName)
    {
        if (Node *n = byName.value(childName))
            return n;
        auto n = std::make_unique<Node>();
        n->name = childName;
        n->path = path.isEmpty() ? childName : path + QLatin1Char('.') + childName;
        n->parent = this;
        n->row = int(children.size());
        byName.insert(childName, n.get());
        children.push_back(std::move(n));
        return children.back().get();
    }
};

LayerTreeModel::LayerTreeModel(QObject *parent)
    : QAbstractItemModel(parent)
    , m_root(std::make_unique<Node>())
{
}

LayerTreeModel::~LayerTreeModel() = default;

void LayerTreeModel::setLayers(const std::vector<std::pair<QString, QStringList>> &layers)
{
    beginResetModel();
    m_bf16Nodes.clear();
    m_highPrecision.clear();
    m_root = std::make_unique<Node>();
    // Layers arrive in depth order, so first appearance keeps every level in depth order too.
    for (const auto &[layer, tensors] : layers) {
        Node *n = m_root.get();
        for (const QString &part : pathOf(layer))
            n = n->child(part);
        n->layer = layer;
        if (expertOf(layer) && n->parent)
            ++n->parent->experts;
        for (const QString &t : tensors) {
            Node *tn = n->child(t);
            tn->layer = layer;
            tn->tensor = t;
        }
    }
    endResetModel();
}

void LayerTreeModel::setHighPrecision(const QHash<QString, QString> &layers)
{
    if (layers == m_highPrecision)
        return;
    m_highPrecision = layers;
    // A node above layers (a GEMM of experts, a transformer layer) is in BF16 where every layer under it is.
    m_bf16Nodes.clear();
    const std::function<std::pair<int, int>(Node *)> count = [&](Node *n) {
        int all = 0, bf16 = 0;
        if (!n->layer.isEmpty() && n->tensor.isEmpty()) {
            ++all;
            bf16 += m_highPrecision.contains(n->layer) ? 1 : 0;
        }
        for (const auto &c : n->children) {
            const auto [a, b] = count(c.get());
            all += a;
            bf16 += b;
        }
        if (n->layer.isEmpty() && all > 0 && bf16 == all)
            m_bf16Nodes.insert(n);
        return std::make_pair(all, bf16);
    };
    count(m_root.get());
    // Each name may change; the tree stays as it is opened.
    const std::function<void(Node *)> changed = [&](Node *n) {
        for (const auto &c : n->children) {
            if (c->tensor.isEmpty()) {
                const QModelIndex i = indexOf(c.get());
                Q_EMIT dataChanged(i, i, {Qt::DisplayRole, Qt::ToolTipRole});
            }
            changed(c.get());
        }
    };
    changed(m_root.get());
}

QModelIndex LayerTreeModel::find(const QString &layer, const QString &tensor) const
{
    Node *n = m_root.get();
    QStringList parts = pathOf(layer);
    if (!tensor.isEmpty())
        parts << tensor;
    for (const QString &part : parts) {
        n = n->byName.value(part);
        if (!n)
            return {};
    }
    return n == m_root.get() ? QModelIndex() : indexOf(n);
}

LayerTreeModel::Node *LayerTreeModel::nodeOf(const QModelIndex &index) const
{
    return index.isValid() ? static_cast<Node *>(index.internalPointer()) : m_root.get();
}

QModelIndex LayerTreeModel::indexOf(Node *node) const
{
    return createIndex(node->row, 0, node);
}

QModelIndex LayerTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    if (!hasIndex(row, column, parent))
        return {};
    return createIndex(row, column, nodeOf(parent)->children[size_t(row)].get());
}

QModelIndex LayerTreeModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    Node *p = nodeOf(child)->parent;
    return p == m_root.get() || !p ? QModelIndex() : indexOf(p);
}

int LayerTreeModel::rowCount(const QModelIndex &parent) const
{
    if (parent.column() > 0)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int LayerTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant LayerTreeModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Node *n = nodeOf(index);
    switch (role) {
    case Qt::DisplayRole: {
        QString name = n->experts > 0 ? tr("%1 (%n experts)", nullptr, n->experts).arg(n->name) : n->name;
        if (n->tensor.isEmpty() && (n->layer.isEmpty() ? m_bf16Nodes.contains(n) : m_highPrecision.contains(n->layer)))
            name += tr(" [BF16]");
        return name;
    }
    case Qt::ToolTipRole: {
        const QString what = !n->tensor.isEmpty() ? n->layer + QLatin1Char('/') + n->tensor
            : n->layer.isEmpty()                  ? n->path
                                                  : n->layer;
        const auto bf16 = m_highPrecision.constFind(n->layer);
        return n->tensor.isEmpty() && bf16 != m_highPrecision.cend()
            ? tr("%1\nin BF16 for the whole run: %2").arg(what, *bf16)
            : what;
    }
    case LayerRole: return n->layer;
    case TensorRole: return n->tensor;
    case PathRole: return n->path;
    default: return {};
    }
}

QVariant LayerTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (section == NameColumn && orientation == Qt::Horizontal && role == Qt::DisplayRole)
        return tr("Layer");
    return {};
}

} // namespace fp8scope
